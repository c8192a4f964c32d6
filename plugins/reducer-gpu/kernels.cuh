// The element-wise bodies of every GPU kernel, written as __host__ __device__
// code so a host test can run them over an emulated grid on a machine with
// no GPU. kernels.cu wraps them in __global__ functions.
#ifndef CARAVAN_REDUCER_GPU_KERNELS_CUH
#define CARAVAN_REDUCER_GPU_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#define CRV_HD __host__ __device__ __forceinline__
// The lane loops must unroll so each lane stays in a register; the host
// compiler knows no such pragma.
#ifdef __CUDA_ARCH__
#define CRV_UNROLL _Pragma("unroll")
#else
#define CRV_UNROLL
#endif

namespace caravan::reducer_gpu {

using Byte = unsigned char;
constexpr size_t kVecBytes = 16;

// Storage is what memory holds, Acc what the add runs in. Signed integers
// use their unsigned twin, where wrap-around is defined and the bits agree.
template <class T>
struct Same {
  using Storage = T;
  using Acc = T;
  static CRV_HD Acc widen(Storage s) { return s; }
  static CRV_HD Storage narrow(Acc a) { return a; }
};

struct F16 {
  using Storage = __half;
  using Acc = float;
  static CRV_HD Acc widen(Storage s) { return __half2float(s); }
  static CRV_HD Storage narrow(Acc a) { return __float2half_rn(a); }
};

struct BF16 {
  using Storage = __nv_bfloat16;
  using Acc = float;
  static CRV_HD Acc widen(Storage s) { return __bfloat162float(s); }
  static CRV_HD Storage narrow(Acc a) { return __float2bfloat16_rn(a); }
};

// Which elements go through 16-byte vectors. Elements [head, head + nvec * V)
// do; the others are scalars. Vectors need every pointer at the same offset
// from a 16-byte boundary; bytewise is set when some pointer is not even
// aligned to its element, where a wider access would fault.
struct Layout {
  size_t count;
  size_t head;
  size_t nvec;
  bool bytewise;
};

inline Layout plan(size_t count, size_t elem, const void* dst, const void* const* srcs,
                   size_t num_srcs) {
  uintptr_t offset = reinterpret_cast<uintptr_t>(dst) % kVecBytes;
  bool together = true, natural = reinterpret_cast<uintptr_t>(dst) % elem == 0;
  for (size_t i = 0; i < num_srcs; ++i) {
    uintptr_t p = reinterpret_cast<uintptr_t>(srcs[i]);
    together = together && p % kVecBytes == offset;
    natural = natural && p % elem == 0;
  }
  if (!together || !natural) return {count, count, 0, !natural};
  size_t head = ((kVecBytes - offset) % kVecBytes) / elem;
  if (head > count) head = count;
  return {count, head, (count - head) / (kVecBytes / elem), false};
}

// Bytewise access (an array not aligned to its element) assembles the
// element's bits in an unsigned integer with shifts, little-endian, and
// converts with the type's own bit casts. On the device each byte is stored
// from a 32-bit register by inline PTX: a byte store straight from the
// 16-bit register that a float16/bfloat16 conversion wrote stored another
// register half's low byte (an H200, CUDA 13.0: 0x4001 at an odd address
// came out as 0x4002, 0xbeef as 0xbe00; the high byte, shifted first, was
// right).
template <size_t N>
struct Bits;
template <>
struct Bits<1> {
  using type = uint8_t;
};
template <>
struct Bits<2> {
  using type = uint16_t;
};
template <>
struct Bits<4> {
  using type = uint32_t;
};
template <>
struct Bits<8> {
  using type = uint64_t;
};

template <class T>
CRV_HD T from_bits(typename Bits<sizeof(T)>::type u) {
  T v;
  std::memcpy(&v, &u, sizeof v);  // integers and floats: same-size scalars
  return v;
}
template <>
CRV_HD __half from_bits<__half>(uint16_t u) {
  __half_raw r;
  r.x = u;
  return __half(r);
}
template <>
CRV_HD __nv_bfloat16 from_bits<__nv_bfloat16>(uint16_t u) {
  __nv_bfloat16_raw r;
  r.x = u;
  return __nv_bfloat16(r);
}

template <class T>
CRV_HD typename Bits<sizeof(T)>::type to_bits(T v) {
  typename Bits<sizeof(T)>::type u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}
template <>
CRV_HD uint16_t to_bits<__half>(__half v) {
  return static_cast<__half_raw>(v).x;
}
template <>
CRV_HD uint16_t to_bits<__nv_bfloat16>(__nv_bfloat16 v) {
  return static_cast<__nv_bfloat16_raw>(v).x;
}

template <class T>
CRV_HD T load(const Byte* p, bool bytewise) {
#ifdef __CUDA_ARCH__
  if (!bytewise) return *reinterpret_cast<const T*>(p);
#endif
  using U = typename Bits<sizeof(T)>::type;
#ifdef __CUDA_ARCH__
  const volatile Byte* bytes = p;
#else
  const Byte* bytes = p;
#endif
  U u = 0;
  for (size_t k = 0; k < sizeof(T); ++k)
    u = static_cast<U>(u | static_cast<U>(static_cast<U>(bytes[k]) << (8 * k)));
  return from_bits<T>(u);
}

template <class T>
CRV_HD void store(Byte* p, T v, bool bytewise) {
#ifdef __CUDA_ARCH__
  if (!bytewise) {
    *reinterpret_cast<T*>(p) = v;
    return;
  }
#endif
  auto u = to_bits<T>(v);
  for (size_t k = 0; k < sizeof(T); ++k) {
#ifdef __CUDA_ARCH__
    unsigned int byte = static_cast<unsigned int>((u >> (8 * k)) & 0xffu);
    asm volatile("st.u8 [%0], %1;" : : "l"(p + k), "r"(byte) : "memory");
#else
    p[k] = static_cast<Byte>(u >> (8 * k));
#endif
  }
}

template <class T>
struct Vec {
  static constexpr int kLanes = kVecBytes / sizeof(T);
  T lane[kLanes];
};

template <class T>
CRV_HD Vec<T> load_vec(const Byte* p) {
  Vec<T> v;
#ifdef __CUDA_ARCH__
  uint4 raw = *reinterpret_cast<const uint4*>(p);  // one 16-byte load
  memcpy(&v, &raw, sizeof v);
#else
  std::memcpy(&v, p, sizeof v);
#endif
  return v;
}

template <class T>
CRV_HD void store_vec(Byte* p, const Vec<T>& v) {
#ifdef __CUDA_ARCH__
  uint4 raw;
  memcpy(&raw, &v, sizeof raw);
  *reinterpret_cast<uint4*>(p) = raw;
#else
  std::memcpy(p, &v, sizeof v);
#endif
}

// ---- Operations: scalar(i) does element i, vector(i) elements i..i+V-1 ------

template <class E>
struct Add2 {
  using S = typename E::Storage;
  static constexpr int kLanes = Vec<S>::kLanes;
  Byte* dst;
  const Byte* a;
  const Byte* b;
  bool bytewise;

  CRV_HD void scalar(size_t i) const {
    constexpr size_t z = sizeof(S);
    S x = load<S>(a + i * z, bytewise), y = load<S>(b + i * z, bytewise);
    store<S>(dst + i * z, E::narrow(E::widen(x) + E::widen(y)), bytewise);
  }
  CRV_HD void vector(size_t i) const {
    constexpr size_t z = sizeof(S);
    Vec<S> x = load_vec<S>(a + i * z), y = load_vec<S>(b + i * z);
    CRV_UNROLL
    for (int k = 0; k < kLanes; ++k)
      x.lane[k] = E::narrow(E::widen(x.lane[k]) + E::widen(y.lane[k]));
    store_vec<S>(dst + i * z, x);
  }
};

template <class E>
struct Scale {
  using S = typename E::Storage;
  using A = typename E::Acc;
  static constexpr int kLanes = Vec<S>::kLanes;
  Byte* data;
  A factor;
  bool bytewise;

  CRV_HD void scalar(size_t i) const {
    Byte* p = data + i * sizeof(S);
    store<S>(p, E::narrow(E::widen(load<S>(p, bytewise)) * factor), bytewise);
  }
  CRV_HD void vector(size_t i) const {
    Byte* p = data + i * sizeof(S);
    Vec<S> x = load_vec<S>(p);
    CRV_UNROLL
    for (int k = 0; k < kLanes; ++k) x.lane[k] = E::narrow(E::widen(x.lane[k]) * factor);
    store_vec<S>(p, x);
  }
};

// Up to N sources summed in registers in source order, so float32 and float64
// round after each add like a chain of sum() calls, and the 16-bit types round
// once. More sources than one launch carries go through an accumulator in
// device memory: acc_in (when set) is added first, and acc_out (when set)
// receives the unrounded sum instead of dst.
template <class E, int N>
struct SumMany {
  using S = typename E::Storage;
  using A = typename E::Acc;
  static constexpr int kLanes = Vec<S>::kLanes;
  Byte* dst;
  const A* acc_in;
  A* acc_out;
  int num;
  bool bytewise;
  const Byte* src[N];

  CRV_HD void finish(size_t i, A sum) const {
    if (acc_out)
      acc_out[i] = sum;
    else
      store<S>(dst + i * sizeof(S), E::narrow(sum), bytewise);
  }
  CRV_HD void scalar(size_t i) const {
    constexpr size_t z = sizeof(S);
    A sum = acc_in ? acc_in[i] + E::widen(load<S>(src[0] + i * z, bytewise))
                   : E::widen(load<S>(src[0] + i * z, bytewise));
    for (int s = 1; s < num; ++s) sum = sum + E::widen(load<S>(src[s] + i * z, bytewise));
    finish(i, sum);
  }
  CRV_HD void vector(size_t i) const {
    constexpr size_t z = sizeof(S);
    A sum[kLanes];
    Vec<S> x = load_vec<S>(src[0] + i * z);
    CRV_UNROLL
    for (int k = 0; k < kLanes; ++k)
      sum[k] = acc_in ? acc_in[i + k] + E::widen(x.lane[k]) : E::widen(x.lane[k]);
    for (int s = 1; s < num; ++s) {
      x = load_vec<S>(src[s] + i * z);
      CRV_UNROLL
      for (int k = 0; k < kLanes; ++k) sum[k] = sum[k] + E::widen(x.lane[k]);
    }
    if (acc_out) {
      CRV_UNROLL
      for (int k = 0; k < kLanes; ++k) acc_out[i + k] = sum[k];
      return;
    }
    CRV_UNROLL
    for (int k = 0; k < kLanes; ++k) x.lane[k] = E::narrow(sum[k]);
    store_vec<S>(dst + i * z, x);
  }
};

// What one thread of a grid-stride loop does: vectors first, then the
// scalars before and after them.
template <class Op>
CRV_HD void run(const Op& op, const Layout& l, size_t thread, size_t threads) {
  for (size_t v = thread; v < l.nvec; v += threads) op.vector(l.head + v * Op::kLanes);
  size_t tail = l.head + l.nvec * Op::kLanes;
  size_t scalars = l.count - l.nvec * Op::kLanes;
  for (size_t j = thread; j < scalars; j += threads)
    op.scalar(j < l.head ? j : tail + (j - l.head));
}

}  // namespace caravan::reducer_gpu

#endif  // CARAVAN_REDUCER_GPU_KERNELS_CUH
