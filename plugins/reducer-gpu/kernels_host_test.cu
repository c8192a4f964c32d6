// Runs the kernel bodies of kernels.cuh on the host over an emulated grid,
// against the CPU reducer's portable kernels, so the vector/scalar split,
// the unaligned paths and the numerics are checked on machines with no GPU.
// (The host conversions of cuda_fp16.h stand in for the device's.)
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels.cuh"
#include "scalar.h"  // the CPU reducer's arithmetic, as the reference
#include "test_data.h"

namespace gpu = caravan::reducer_gpu;
namespace cpu = caravan::reducer_cpu::scalar;
using namespace caravan::reducer_gpu::test;

namespace {

// Every element is written by exactly one emulated thread, whatever the
// grid; a few grid sizes cover the strided loops.
template <class Op>
void emulate(const Op& op, const gpu::Layout& l, size_t threads) {
  for (size_t t = 0; t < threads; ++t) gpu::run(op, l, t, threads);
}

// What the device needs of a layout, which the host emulation cannot see:
// vectors start on a 16-byte boundary of every array, and only arrays
// aligned to their element skip the bytewise path.
void check_layout(const gpu::Layout& l, size_t z, std::vector<const void*> ptrs,
                  const std::string& where) {
  bool natural = true;
  for (const void* p : ptrs) natural = natural && reinterpret_cast<uintptr_t>(p) % z == 0;
  EXPECT_EQ(l.bytewise, !natural) << where;
  ASSERT_LE(l.head + l.nvec * (16 / z), l.count) << where;
  if (l.nvec == 0) return;
  EXPECT_LT(l.head, 16 / z) << where;
  for (const void* p : ptrs)
    EXPECT_EQ((reinterpret_cast<uintptr_t>(p) + l.head * z) % 16, 0u)
        << "vector off a 16-byte boundary, " << where;
}

// An array that starts `offset` bytes into a padded buffer.
struct Buf {
  std::vector<unsigned char> bytes;
  size_t offset;
  Buf(size_t count, unsigned dt, size_t off, Rng& rng)
      : bytes(count * info(dt).size + 32), offset(off) {
    fill(bytes.data(), bytes.size() / info(dt).size, dt, rng);
  }
  unsigned char* data() { return bytes.data() + offset; }
};

template <class E, class C>
void check_type(unsigned dt) {
  using S = typename E::Storage;
  constexpr size_t z = sizeof(S);
  const bool is_float = info(dt).mant_bits != 0;
  Rng rng;
  const size_t offsets[][3] = {{0, 0, 0}, {z, z, z}, {0, z, 0}, {16 - z, 16 - z, 16 - z},
                               {1, 1, 1}, {3, 5, 7}};
  size_t threads = 1;
  for (size_t count : {0, 1, 7, 33, 100, 1000}) {
    for (const auto& off : offsets) {
      threads = threads % 97 + 13;
      std::string where = std::string(info(dt).name) + " count " + std::to_string(count) +
                          " offsets " + std::to_string(off[0]) + "," + std::to_string(off[1]) +
                          "," + std::to_string(off[2]);
      auto expect_eq = [&](const unsigned char* got, const unsigned char* want, const char* op) {
        for (size_t i = 0; i < count; ++i)
          ASSERT_TRUE(same(got + i * z, want + i * z, dt)) << op << " " << where << " at " << i;
      };
      Buf dst(count, dt, off[0], rng), a(count, dt, off[1], rng), b(count, dt, off[2], rng);
      const std::vector<unsigned char> before = dst.bytes;
      std::vector<unsigned char> want(count * z);

      // sum2, then sum as sum2 with dst as a
      const void* ab[] = {a.data(), b.data()};
      gpu::Layout l = gpu::plan(count, z, dst.data(), ab, 2);
      check_layout(l, z, {dst.data(), a.data(), b.data()}, where);
      if (off[0] == off[1] && off[1] == off[2] && off[0] % z == 0 && count >= 33)
        EXPECT_GT(l.nvec, 0u) << where;
      cpu::add2<C>(want.data(), a.data(), b.data(), count);
      emulate(gpu::Add2<E>{dst.data(), a.data(), b.data(), l.bytewise}, l, threads);
      expect_eq(dst.data(), want.data(), "sum2");
      for (size_t i = 0; i < dst.bytes.size(); ++i)
        if (i < off[0] || i >= off[0] + count * z)
          ASSERT_EQ(dst.bytes[i], before[i]) << "sum2 strayed, " << where;
      cpu::add2<C>(want.data(), dst.data(), b.data(), count);
      const void* db[] = {dst.data(), b.data()};
      l = gpu::plan(count, z, dst.data(), db, 2);
      emulate(gpu::Add2<E>{dst.data(), dst.data(), b.data(), l.bytewise}, l, threads);
      expect_eq(dst.data(), want.data(), "sum");

      // sum_many of 5 sources, dst being the first, in one launch...
      Buf c(count, dt, off[1], rng), d(count, dt, off[2], rng), e(count, dt, off[0], rng);
      std::memcpy(dst.data(), a.data(), count * z);
      const void* srcs[] = {dst.data(), b.data(), c.data(), d.data(), e.data()};
      if (z == 2) {  // float16 and bfloat16: one rounding at the end
        std::vector<float> acc(count);
        cpu::acc_init<C>(acc.data(), srcs[0], srcs[1], count);
        for (int s = 2; s < 5; ++s) cpu::acc_add<C>(acc.data(), srcs[s], count);
        cpu::acc_store<C>(want.data(), acc.data(), count);
      } else {
        cpu::add2<C>(want.data(), srcs[0], srcs[1], count);
        for (int s = 2; s < 5; ++s) cpu::add2<C>(want.data(), want.data(), srcs[s], count);
      }
      gpu::SumMany<E, 16> all{};
      all.dst = dst.data();
      all.num = 5;
      for (int s = 0; s < 5; ++s) all.src[s] = static_cast<const unsigned char*>(srcs[s]);
      l = gpu::plan(count, z, dst.data(), srcs, 5);
      check_layout(l, z, std::vector<const void*>(srcs, srcs + 5), where);
      all.bytewise = l.bytewise;
      std::vector<unsigned char> first_src(a.data(), a.data() + count * z);
      emulate(all, l, threads);
      expect_eq(dst.data(), want.data(), "sum_many");

      // ...and in two launches through the accumulator, as past the sources
      // one launch carries
      std::memcpy(dst.data(), first_src.data(), count * z);
      std::vector<typename E::Acc> acc(count + 1);
      gpu::SumMany<E, 16> part1 = all, part2 = all;
      part1.num = 3;
      part1.acc_out = acc.data();
      part2.num = 2;
      part2.acc_in = acc.data();
      part2.src[0] = all.src[3];
      part2.src[1] = all.src[4];
      emulate(part1, gpu::plan(count, z, dst.data(), srcs, 3), threads);
      emulate(part2, gpu::plan(count, z, dst.data(), srcs + 3, 2), threads);
      expect_eq(dst.data(), want.data(), "chunked sum_many");

      if (!is_float) continue;
      for (double factor : {0.125, 1.0 / 3.0, -7.5, 1e-30}) {
        std::memcpy(want.data(), a.data(), count * z);
        cpu::scale<C>(want.data(), count, factor);
        l = gpu::plan(count, z, a.data(), nullptr, 0);
        check_layout(l, z, {a.data()}, where);
        emulate(gpu::Scale<E>{a.data(), static_cast<typename E::Acc>(factor), l.bytewise}, l,
                threads);
        expect_eq(a.data(), want.data(), "scale");
      }
    }
  }
}

}  // namespace

TEST(GpuKernelsOnHost, Float32) { check_type<gpu::Same<float>, cpu::F32>(0); }
TEST(GpuKernelsOnHost, Float64) { check_type<gpu::Same<double>, cpu::F64>(1); }
TEST(GpuKernelsOnHost, Float16) { check_type<gpu::F16, cpu::F16>(2); }
TEST(GpuKernelsOnHost, Uint8) { check_type<gpu::Same<uint8_t>, cpu::U8>(3); }
TEST(GpuKernelsOnHost, Int32) { check_type<gpu::Same<uint32_t>, cpu::U32>(4); }
TEST(GpuKernelsOnHost, Int8) { check_type<gpu::Same<uint8_t>, cpu::U8>(5); }
TEST(GpuKernelsOnHost, Int64) { check_type<gpu::Same<uint64_t>, cpu::U64>(6); }
TEST(GpuKernelsOnHost, BFloat16) { check_type<gpu::BF16, cpu::BF16>(7); }
