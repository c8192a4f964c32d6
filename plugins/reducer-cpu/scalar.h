// Element-at-a-time kernels: the whole portable family, and the tails of the
// SIMD ones. Memory is reached through memcpy because the ABI lets pointers
// have any alignment, even for multi-byte types.
#ifndef CARAVAN_REDUCER_CPU_SCALAR_H
#define CARAVAN_REDUCER_CPU_SCALAR_H

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "caravan/float16.h"

namespace caravan::reducer_cpu::scalar {

template <class T>
inline T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
inline void store(unsigned char* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

// An element type: Storage is what memory holds, Math what the add runs in.
// Signed integers use their unsigned twin, where wrap-around is defined and
// the bits come out the same.
template <class T>
struct Same {
  using Storage = T;
  using Math = T;
  static Math widen(Storage s) { return s; }
  static Storage narrow(Math m) { return m; }
};
using F32 = Same<float>;
using F64 = Same<double>;
using U8 = Same<uint8_t>;
using U32 = Same<uint32_t>;
using U64 = Same<uint64_t>;

struct F16 {
  using Storage = uint16_t;
  using Math = float;
  static Math widen(Storage s) { return caravan_f16_to_f32(s); }
  static Storage narrow(Math m) { return caravan_f32_to_f16(m); }
};

struct BF16 {
  using Storage = uint16_t;
  using Math = float;
  static Math widen(Storage s) { return caravan_bf16_to_f32(s); }
  static Storage narrow(Math m) { return caravan_f32_to_bf16(m); }
};

template <class S>
void add2(void* dst, const void* a, const void* b, size_t n) {
  using St = typename S::Storage;
  using M = typename S::Math;
  constexpr size_t z = sizeof(St);
  auto* d = static_cast<unsigned char*>(dst);
  auto* pa = static_cast<const unsigned char*>(a);
  auto* pb = static_cast<const unsigned char*>(b);
#pragma GCC ivdep
  for (size_t i = 0; i < n; ++i) {
    M x = S::widen(load<St>(pa + i * z));
    M y = S::widen(load<St>(pb + i * z));
    store<St>(d + i * z, S::narrow(static_cast<M>(x + y)));
  }
}

template <class S>
void scale(void* data, size_t n, double factor) {
  using St = typename S::Storage;
  using M = typename S::Math;
  constexpr size_t z = sizeof(St);
  auto* d = static_cast<unsigned char*>(data);
  const M f = static_cast<M>(factor);
  for (size_t i = 0; i < n; ++i) store<St>(d + i * z, S::narrow(S::widen(load<St>(d + i * z)) * f));
}

template <class S>
void acc_init(float* acc, const void* a, const void* b, size_t n) {
  using St = typename S::Storage;
  constexpr size_t z = sizeof(St);
  auto* pa = static_cast<const unsigned char*>(a);
  auto* pb = static_cast<const unsigned char*>(b);
  for (size_t i = 0; i < n; ++i)
    acc[i] = S::widen(load<St>(pa + i * z)) + S::widen(load<St>(pb + i * z));
}

template <class S>
void acc_add(float* acc, const void* src, size_t n) {
  using St = typename S::Storage;
  constexpr size_t z = sizeof(St);
  auto* p = static_cast<const unsigned char*>(src);
  for (size_t i = 0; i < n; ++i) acc[i] += S::widen(load<St>(p + i * z));
}

template <class S>
void acc_store(void* dst, const float* acc, size_t n) {
  using St = typename S::Storage;
  constexpr size_t z = sizeof(St);
  auto* d = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < n; ++i) store<St>(d + i * z, S::narrow(acc[i]));
}

}  // namespace caravan::reducer_cpu::scalar

#endif  // CARAVAN_REDUCER_CPU_SCALAR_H
