// Drives libcaravan-reducer-cpu.so through its C table, as the engine would,
// and checks every kernel family against references that share no code with
// the plugin: integers in uint64, floats in float64, and the 16-bit float
// types through a table of every value they can hold.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "caravan/plugin/plugin.h"
#include "caravan/plugin/reducer_v1.h"

namespace {

// ---- Loading the plugin and a fake host -------------------------------------

const caravan_plugin_descriptor* descriptor() {
  static const caravan_plugin_descriptor* d = [] {
    void* lib = dlopen(CARAVAN_REDUCER_CPU_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return static_cast<const caravan_plugin_descriptor*>(nullptr);
    auto entry = reinterpret_cast<caravan_plugin_entry_fn>(dlsym(lib, CARAVAN_PLUGIN_ENTRY_SYMBOL));
    return entry ? entry() : nullptr;
  }();
  return d;
}

const caravan_reducer_ops_v1& ops() { return *static_cast<const caravan_reducer_ops_v1*>(descriptor()->ops); }

struct FakeHost {
  std::map<std::string, std::string> params;
  std::string error;
  std::vector<std::string> logs;
  caravan_host_v1 table{};

  FakeHost(const FakeHost&) = delete;  // the table points at this object
  FakeHost& operator=(const FakeHost&) = delete;
  FakeHost() {
    table.struct_size = sizeof table;
    table.host_ctx = this;
    table.log = [](void* c, caravan_log_level, const char* m) { static_cast<FakeHost*>(c)->logs.push_back(m); };
    table.get_param = [](void* c, const char* name) -> const char* {
      auto& p = static_cast<FakeHost*>(c)->params;
      auto it = p.find(name);
      return it == p.end() ? nullptr : it->second.c_str();
    };
    table.get_env = [](void*, const char*) -> const char* { return nullptr; };
    table.set_error = [](void* c, const char* m) { static_cast<FakeHost*>(c)->error = m; };
  }
};

// One reducer instance; `status` is what init returned.
struct Instance {
  FakeHost host;
  void* ctx = nullptr;
  caravan_status status;

  explicit Instance(std::map<std::string, std::string> params) {
    host.params = std::move(params);
    status = ops().init(&host.table, &ctx);
  }
  ~Instance() {
    if (ctx) {
      EXPECT_EQ(ops().finalize(ctx), CARAVAN_STATUS_OK);
    }
  }
  std::string kernel() {
    caravan_reducer_properties_v1 p{};
    p.struct_size = sizeof p;
    EXPECT_EQ(ops().properties(ctx, &p), CARAVAN_STATUS_OK);
    return p.kernel ? p.kernel : "";
  }
};

bool cpu_supports(const std::string& kernel) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma");
  if (kernel == "avx2") return avx2;
  if (kernel == "avx512") return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#endif
  return kernel == "portable" || kernel == "auto";
}

// ---- Element types and their reference arithmetic ---------------------------

struct DType {
  caravan_dtype id;
  const char* name;
  size_t size;
  bool is_float;
  int mant_bits;  // floats: stored mantissa bits
  int exp_bits;
};

const DType kDTypes[] = {
    {CARAVAN_FLOAT32, "float32", 4, true, 23, 8},  {CARAVAN_FLOAT64, "float64", 8, true, 52, 11},
    {CARAVAN_FLOAT16, "float16", 2, true, 10, 5},  {CARAVAN_UINT8, "uint8", 1, false, 0, 0},
    {CARAVAN_INT32, "int32", 4, false, 0, 0},      {CARAVAN_INT8, "int8", 1, false, 0, 0},
    {CARAVAN_INT64, "int64", 8, false, 0, 0},      {CARAVAN_BFLOAT16, "bfloat16", 2, true, 7, 8},
};

uint64_t mask_of(const DType& t) { return t.size == 8 ? ~0ull : (1ull << (8 * t.size)) - 1; }
uint64_t exp_mask(const DType& t) { return ((1ull << t.exp_bits) - 1) << t.mant_bits; }
uint64_t sign_bit(const DType& t) { return 1ull << (8 * t.size - 1); }
bool is_nan_bits(const DType& t, uint64_t b) {
  return t.is_float && (b & exp_mask(t)) == exp_mask(t) && (b & ((1ull << t.mant_bits) - 1)) != 0;
}
bool is_quiet_nan_bits(const DType& t, uint64_t b) { return is_nan_bits(t, b) && (b >> (t.mant_bits - 1) & 1); }

// The exact value of a float bit pattern, any width, written from the format's
// definition rather than by type punning.
double decode(const DType& t, uint64_t b) {
  int bias = (1 << (t.exp_bits - 1)) - 1;
  uint64_t mant = b & ((1ull << t.mant_bits) - 1);
  uint64_t e = (b & exp_mask(t)) >> t.mant_bits;
  double sign = (b & sign_bit(t)) ? -1.0 : 1.0;
  if (e == (1ull << t.exp_bits) - 1) return mant ? std::nan("") : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(static_cast<double>(mant), 1 - bias - t.mant_bits);
  return sign * std::ldexp(static_cast<double>(mant | (1ull << t.mant_bits)), static_cast<int>(e) - bias - t.mant_bits);
}

// Every non-negative finite value of a 16-bit float type in bit order, then
// the first power of two past the largest, standing in for infinity.
struct HalfTable {
  std::vector<double> values;
  explicit HalfTable(const DType& t) {
    uint64_t inf = exp_mask(t);
    for (uint64_t b = 0; b < inf; ++b) values.push_back(decode(t, b));
    values.push_back(std::ldexp(1.0, 1 << (t.exp_bits - 1)));
  }
};

const HalfTable& table_for(const DType& t) {
  static const HalfTable f16(kDTypes[2]), bf16(kDTypes[7]);
  return t.id == CARAVAN_FLOAT16 ? f16 : bf16;
}

const uint64_t kNaN = ~0ull;  // a reference result that only says "some NaN"

// Rounds a value to the nearest 16-bit float, ties to the even bit pattern.
uint64_t round_half(const DType& t, double x) {
  if (std::isnan(x)) return kNaN;
  const auto& v = table_for(t).values;
  uint64_t sign = std::signbit(x) ? sign_bit(t) : 0;
  double a = std::fabs(x);
  if (a >= v.back()) return sign | (v.size() - 1);
  size_t lo = static_cast<size_t>(std::upper_bound(v.begin(), v.end(), a) - v.begin()) - 1;
  double mid = (v[lo] + v[lo + 1]) / 2;  // exact: one more bit than the format
  size_t pick = a < mid ? lo : a > mid ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
  return sign | pick;
}

uint64_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
uint64_t f64_bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return u;
}

// Rounds a float64 to the dtype. Float32 sums go through here too: rounding
// the float64 sum of two float32s gives exactly the float32 sum.
uint64_t encode(const DType& t, double x) {
  if (std::isnan(x)) return kNaN;
  if (t.id == CARAVAN_FLOAT64) return f64_bits(x);
  if (t.id == CARAVAN_FLOAT32) return f32_bits(static_cast<float>(x));
  return round_half(t, x);
}

// The value of an element; the 16-bit types look it up, for speed.
double value(const DType& t, uint64_t b) {
  if (t.size != 2) return decode(t, b);
  const auto& v = table_for(t).values;
  uint64_t mag = b & (sign_bit(t) - 1);
  if (mag >= v.size() - 1) return decode(t, b);  // inf and NaN
  return (b & sign_bit(t)) ? -v[mag] : v[mag];
}

// The dtype's sum of `in` in order: integers wrap, float64 adds in float64,
// the others accumulate in float32 and round once at the end.
uint64_t ref_sum(const DType& t, const std::vector<uint64_t>& in) {
  if (!t.is_float) {
    uint64_t s = 0;
    for (uint64_t x : in) s += x;
    return s & mask_of(t);
  }
  double acc = value(t, in[0]);
  for (size_t i = 1; i < in.size(); ++i) {
    acc += value(t, in[i]);
    if (t.id != CARAVAN_FLOAT64) acc = static_cast<float>(acc);
  }
  return encode(t, acc);
}

uint64_t ref_scale(const DType& t, uint64_t x, double factor) {
  if (t.id == CARAVAN_FLOAT64) return encode(t, value(t, x) * factor);
  // float32 product of two float32s, exact in float64 and then rounded
  float p = static_cast<float>(value(t, x) * static_cast<double>(static_cast<float>(factor)));
  return encode(t, p);
}

// ---- Random inputs ------------------------------------------------------------

struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
};

// Floats mix raw bit patterns (NaN, inf, subnormals), moderate values whose
// sums really round, and tiny ones near the subnormal range.
uint64_t random_element(const DType& t, Rng& rng) {
  uint64_t r = rng.next();
  if (!t.is_float) return r & mask_of(t);
  uint64_t mant = r & ((1ull << t.mant_bits) - 1);
  uint64_t sign = (r >> 62 & 1) ? sign_bit(t) : 0;
  uint64_t bias = (1ull << (t.exp_bits - 1)) - 1;
  uint64_t e;
  switch (rng.next() % 4) {
    case 0: return r & mask_of(t);
    case 1: e = rng.next() % 4; break;
    default: e = bias - 8 + rng.next() % 17; break;
  }
  return sign | (e << t.mant_bits) | mant;
}

// ---- Buffers with guard bytes -------------------------------------------------

// An array at a chosen byte offset from a 64-byte boundary, with canaries on
// both sides to catch a kernel that writes past its tail.
class Buffer {
 public:
  Buffer(const DType& t, size_t n, size_t offset) : t_(t), n_(n) {
    raw_.assign(n * t.size + offset + 2 * kGuard + 64, kCanary);
    auto base = reinterpret_cast<uintptr_t>(raw_.data()) + kGuard;
    base = (base + 63) & ~uintptr_t{63};
    start_ = base + offset - reinterpret_cast<uintptr_t>(raw_.data());
  }
  void* ptr() { return raw_.data() + start_; }
  uint64_t get(size_t i) const {
    uint64_t v = 0;
    std::memcpy(&v, raw_.data() + start_ + i * t_.size, t_.size);
    return v;
  }
  void set(size_t i, uint64_t v) { std::memcpy(raw_.data() + start_ + i * t_.size, &v, t_.size); }
  void fill(const std::vector<uint64_t>& v) {
    for (size_t i = 0; i < n_; ++i) set(i, v[i]);
  }
  bool guards_intact() const {
    for (size_t i = 0; i < raw_.size(); ++i)
      if ((i < start_ || i >= start_ + n_ * t_.size) && raw_[i] != kCanary) return false;
    return true;
  }

 private:
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kCanary = 0xA5;
  const DType& t_;
  size_t n_;
  std::vector<uint8_t> raw_;
  size_t start_;
};

std::string describe(uint64_t want) {
  if (want == kNaN) return "a quiet NaN";
  char s[32];
  std::snprintf(s, sizeof s, "0x%llx", static_cast<unsigned long long>(want));
  return s;
}

// Compares dst[0..n) with the reference; NaN only has to be a quiet NaN.
void expect_matches(const DType& t, const Buffer& dst, const std::vector<uint64_t>& want, const std::string& what) {
  size_t bad = 0;
  for (size_t i = 0; i < want.size() && bad < 5; ++i) {
    uint64_t got = dst.get(i);
    bool ok = want[i] == kNaN ? is_quiet_nan_bits(t, got) : got == want[i];
    if (!ok) {
      ++bad;
      ADD_FAILURE() << what << ": element " << i << " of " << want.size() << ": got " << describe(got)
                    << ", want " << describe(want[i]);
    }
  }
  EXPECT_TRUE(dst.guards_intact()) << what << ": wrote outside the destination";
}

// ---- The main matrix ----------------------------------------------------------

enum class Op { kSum, kSum2, kSumMany, kScale };
enum class Alias { kNone, kFirst, kSecond };  // dst is a separate array, the first or the second input

struct Case {
  std::string kernel;
  size_t dtype_index;
  Op op;
  size_t length;
  bool misaligned;
  Alias alias;
};

const char* op_name(Op op) {
  switch (op) {
    case Op::kSum: return "sum";
    case Op::kSum2: return "sum2";
    case Op::kSumMany: return "sum_many";
    case Op::kScale: return "scale";
  }
  return "?";
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  const char* alias[] = {"separate", "dst_is_first", "dst_is_second"};
  return c.kernel + "_" + kDTypes[c.dtype_index].name + "_" + op_name(c.op) + "_" + std::to_string(c.length) +
         (c.misaligned ? "_misaligned_" : "_aligned_") + alias[static_cast<int>(c.alias)];
}

// Without this gtest prints every Case byte by byte at start-up, which is
// most of the start-up time of each of the many processes ctest runs.
void PrintTo(const Case& c, std::ostream* os) { *os << case_name({c, 0}); }

constexpr size_t kBig = (1u << 20) + 3;
constexpr double kFactor = 0.7;  // not exact in any type, so the factor's own rounding shows

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  // The kernel varies fastest so that neighbouring cases share their inputs
  // and reference (see reference_for).
  for (size_t d = 0; d < std::size(kDTypes); ++d)
    for (Op op : {Op::kSum, Op::kSum2, Op::kSumMany, Op::kScale}) {
      if (op == Op::kScale && !kDTypes[d].is_float) continue;
      std::vector<Alias> aliases;
      if (op == Op::kSum || op == Op::kScale) aliases = {Alias::kFirst};
      if (op == Op::kSum2) aliases = {Alias::kNone, Alias::kFirst, Alias::kSecond};
      if (op == Op::kSumMany) aliases = {Alias::kNone, Alias::kFirst};
      for (size_t len : {size_t{0}, size_t{1}, size_t{7}, size_t{4095}, kBig})
        for (bool mis : {false, true})
          for (Alias a : aliases) {
            // The big arrays are for the blocking, the threads and the main
            // loops; one layout per op is enough there, and keeps ctest (a
            // process per case) quick.
            if (len == kBig && (a != aliases.back() || !mis)) continue;
            for (const char* kernel : {"portable", "avx2", "avx512"}) cases.push_back({kernel, d, op, len, mis, a});
          }
    }
  return cases;
}

struct Reference {
  size_t dtype_index = ~size_t{0};
  Op op = Op::kSum;
  size_t length = 0;
  std::vector<std::vector<uint64_t>> in;
  std::vector<uint64_t> want;
};

// Inputs and expected output for a case. The reference is the slow part of
// the test, so the last one is kept for the cases that follow with the same
// dtype, op and length.
const Reference& reference_for(const Case& c) {
  static Reference ref;
  if (ref.dtype_index == c.dtype_index && ref.op == c.op && ref.length == c.length) return ref;
  const DType& t = kDTypes[c.dtype_index];
  size_t num_inputs = c.op == Op::kScale ? 1 : c.op == Op::kSumMany ? 3 : 2;
  Rng rng{0x9E3779B97F4A7C15ull ^ (c.length * 131 + c.dtype_index * 7 + static_cast<size_t>(c.op))};
  ref.in.assign(num_inputs, std::vector<uint64_t>(c.length));
  for (auto& v : ref.in)
    for (auto& x : v) x = random_element(t, rng);
  ref.want.assign(c.length, 0);
  std::vector<uint64_t> column(num_inputs);
  for (size_t i = 0; i < c.length; ++i) {
    if (c.op == Op::kScale) {
      ref.want[i] = ref_scale(t, ref.in[0][i], kFactor);
      continue;
    }
    for (size_t k = 0; k < num_inputs; ++k) column[k] = ref.in[k][i];
    ref.want[i] = ref_sum(t, column);
  }
  ref.dtype_index = c.dtype_index;
  ref.op = c.op;
  ref.length = c.length;
  return ref;
}

class ReducerMatrix : public testing::TestWithParam<Case> {};

TEST_P(ReducerMatrix, MatchesReference) {
  const Case& c = GetParam();
  const DType& t = kDTypes[c.dtype_index];
  if (!cpu_supports(c.kernel)) GTEST_SKIP() << "this CPU lacks the instructions of the " << c.kernel << " kernels";
  Instance inst({{"KERNEL", c.kernel}});
  ASSERT_EQ(inst.status, CARAVAN_STATUS_OK) << inst.host.error;
  ASSERT_EQ(inst.kernel(), c.kernel);

  const Reference& ref = reference_for(c);
  const auto& in = ref.in;
  const auto& want = ref.want;
  size_t num_inputs = in.size();

  // Offsets differ per array so that their misalignments differ too.
  std::vector<Buffer> bufs;
  for (size_t k = 0; k < num_inputs; ++k) {
    bufs.emplace_back(t, c.length, c.misaligned ? 2 * k + 3 : 0);
    bufs.back().fill(in[k]);
  }
  Buffer separate(t, c.length, c.misaligned ? 1 : 0);
  Buffer& dst = c.alias == Alias::kNone ? separate : c.alias == Alias::kFirst ? bufs[0] : bufs[1];

  caravan_status s = CARAVAN_STATUS_INTERNAL;
  switch (c.op) {
    case Op::kSum: s = ops().sum(inst.ctx, dst.ptr(), bufs[1].ptr(), c.length, t.id, nullptr); break;
    case Op::kSum2: s = ops().sum2(inst.ctx, dst.ptr(), bufs[0].ptr(), bufs[1].ptr(), c.length, t.id, nullptr); break;
    case Op::kSumMany: {
      const void* srcs[] = {bufs[0].ptr(), bufs[1].ptr(), bufs[2].ptr()};
      s = ops().sum_many(inst.ctx, dst.ptr(), srcs, 3, c.length, t.id, nullptr);
      break;
    }
    case Op::kScale: s = ops().scale(inst.ctx, dst.ptr(), c.length, t.id, kFactor, nullptr); break;
  }
  ASSERT_EQ(s, CARAVAN_STATUS_OK) << inst.host.error;
  expect_matches(t, dst, want, case_name({c, 0}));
  for (size_t k = 0; k < num_inputs; ++k)
    if (&bufs[k] != &dst) {
      for (size_t i = 0; i < c.length; ++i)
        if (bufs[k].get(i) != in[k][i]) {
          ADD_FAILURE() << "input " << k << " changed at element " << i;
          break;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(All, ReducerMatrix, testing::ValuesIn(all_cases()), case_name);

// ---- Per-kernel edge cases ------------------------------------------------------

class ReducerKernel : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!cpu_supports(GetParam())) GTEST_SKIP() << "this CPU lacks the instructions of the " << GetParam() << " kernels";
    inst_ = std::make_unique<Instance>(std::map<std::string, std::string>{{"KERNEL", GetParam()}});
    ASSERT_EQ(inst_->status, CARAVAN_STATUS_OK) << inst_->host.error;
  }
  // dst = a + b over the given pairs, repeated so both the vector loop and the
  // scalar tail see every pair; checks against hand-written expectations.
  void check_pairs(const DType& t, const std::vector<std::array<uint64_t, 3>>& cases) {
    size_t reps = 40;  // more than one 64-byte vector of the narrowest type
    size_t n = cases.size() * reps;
    Buffer a(t, n, 1), b(t, n, 2), d(t, n, 0);
    std::vector<uint64_t> want(n);
    for (size_t i = 0; i < n; ++i) {
      const auto& c = cases[(i + i / cases.size()) % cases.size()];
      a.set(i, c[0]);
      b.set(i, c[1]);
      want[i] = c[2];
    }
    ASSERT_EQ(ops().sum2(inst_->ctx, d.ptr(), a.ptr(), b.ptr(), n, t.id, nullptr), CARAVAN_STATUS_OK);
    expect_matches(t, d, want, std::string(t.name) + " special values");
  }
  std::unique_ptr<Instance> inst_;
};

TEST_P(ReducerKernel, Float16SpecialValues) {
  check_pairs(kDTypes[2], {
                              {0x7c00, 0x3c00, 0x7c00},  // inf + 1
                              {0x7c00, 0xfc00, kNaN},    // inf - inf
                              {0x7e00, 0x3c00, kNaN},    // qNaN + 1
                              {0x7c01, 0x3c00, kNaN},    // sNaN + 1 comes out quiet
                              {0x7bff, 0x4c00, 0x7c00},  // 65504 + 16 = 65520: the tie goes to inf
                              {0x7bff, 0x4bff, 0x7bff},  // 65504 + 15.99: stays finite
                              {0x0001, 0x0001, 0x0002},  // subnormals add exactly
                              {0x03ff, 0x0001, 0x0400},  // into the smallest normal
                              {0x8001, 0x0001, 0x0000},  // x - x = +0
                              {0x8000, 0x8000, 0x8000},  // -0 + -0 = -0
                              {0x3c00, 0x1000, 0x3c00},  // 1 + 2^-11: a tie, to even
                              {0x3c01, 0x1000, 0x3c02},  // 1+ulp + 2^-11: a tie, to even upwards
                              {0xfbff, 0xfbff, 0xfc00},  // -max - max = -inf
                          });
}

TEST_P(ReducerKernel, BFloat16SpecialValues) {
  check_pairs(kDTypes[7], {
                              {0x7f80, 0x3f80, 0x7f80},  // inf + 1
                              {0x7f80, 0xff80, kNaN},    // inf - inf
                              {0x7fc0, 0x3f80, kNaN},    // qNaN + 1
                              {0x7f81, 0x3f80, kNaN},    // sNaN + 1 comes out quiet
                              {0x7fff, 0x0000, kNaN},    // a NaN whose rounding would carry
                              {0x7f7f, 0x7f7f, 0x7f80},  // max + max = inf
                              {0x0001, 0x0001, 0x0002},  // subnormals
                              {0x3f80, 0x3b80, 0x3f80},  // 1 + 2^-8: a tie, to even
                              {0x3f81, 0x3b80, 0x3f82},  // a tie, to even upwards
                              {0x8000, 0x8000, 0x8000},  // -0 + -0 = -0
                          });
}

TEST_P(ReducerKernel, Float32And64SpecialValues) {
  const DType& f32 = kDTypes[0];
  const DType& f64 = kDTypes[1];
  check_pairs(f32, {
                       {0x7f800000, 0x3f800000, 0x7f800000},
                       {0x7f800000, 0xff800000, kNaN},
                       {0x7f800001, 0x3f800000, kNaN},
                       {0x7f7fffff, 0x7f7fffff, 0x7f800000},
                       {0x00000001, 0x00000001, 0x00000002},
                       {0x80000000, 0x80000000, 0x80000000},
                       {0x3f800000, 0x33800000, 0x3f800000},
                   });
  check_pairs(f64, {
                       {0x7ff0000000000000, 0x3ff0000000000000, 0x7ff0000000000000},
                       {0x7ff0000000000000, 0xfff0000000000000, kNaN},
                       {0x7ff0000000000001, 0x3ff0000000000000, kNaN},
                       {0x0000000000000001, 0x0000000000000001, 0x0000000000000002},
                       {0x8000000000000000, 0x8000000000000000, 0x8000000000000000},
                   });
}

// Every 16-bit pattern against a spread of others: the whole rounding logic
// of both halves, including every subnormal and every NaN payload.
TEST_P(ReducerKernel, HalvesEveryPatternRounds) {
  for (size_t d : {2, 7}) {
    const DType& t = kDTypes[d];
    Rng rng{12345 + d};
    const size_t partners = 24;
    size_t n = 65536 * partners;
    Buffer a(t, n, 0), b(t, n, 0);
    std::vector<uint64_t> want(n);
    for (size_t i = 0; i < n; ++i) {
      uint64_t x = i & 0xffff, y = i < 65536 ? 0x8000 : random_element(t, rng);  // x + -0 = x first
      a.set(i, x);
      b.set(i, y);
      want[i] = ref_sum(t, {x, y});
    }
    ASSERT_EQ(ops().sum(inst_->ctx, a.ptr(), b.ptr(), n, t.id, nullptr), CARAVAN_STATUS_OK);
    expect_matches(t, a, want, std::string(t.name) + " every pattern");
  }
}

TEST_P(ReducerKernel, SumManySourceCounts) {
  for (const DType& t : kDTypes)
    for (size_t num : {1, 2, 5, 9})
      for (size_t n : {size_t{3}, size_t{5000}}) {
        Rng rng{num * 1000 + n};
        std::vector<Buffer> bufs;
        std::vector<std::vector<uint64_t>> in(num, std::vector<uint64_t>(n));
        std::vector<const void*> srcs;
        for (size_t k = 0; k < num; ++k) {
          for (auto& x : in[k]) x = random_element(t, rng);
          bufs.emplace_back(t, n, k % 3);
        }
        for (size_t k = 0; k < num; ++k) {
          bufs[k].fill(in[k]);
          srcs.push_back(bufs[k].ptr());
        }
        std::vector<uint64_t> want(n), column(num);
        for (size_t i = 0; i < n; ++i) {
          for (size_t k = 0; k < num; ++k) column[k] = in[k][i];
          want[i] = ref_sum(t, column);
        }
        Buffer dst(t, n, 1);
        ASSERT_EQ(ops().sum_many(inst_->ctx, dst.ptr(), srcs.data(), num, n, t.id, nullptr), CARAVAN_STATUS_OK);
        // one source is a copy: NaN payloads pass through untouched
        if (num == 1)
          for (size_t i = 0; i < n; ++i) want[i] = in[0][i];
        expect_matches(t, dst, want, std::string(t.name) + " sum_many of " + std::to_string(num));
      }
}

INSTANTIATE_TEST_SUITE_P(Kernels, ReducerKernel, testing::Values("portable", "avx2", "avx512"),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

// ---- Threads --------------------------------------------------------------------

// Runs every op on one instance and returns the destination bytes.
std::vector<uint64_t> run_all_ops(Instance& inst, const DType& t, size_t n, Op op) {
  Rng rng{77 + n};
  std::vector<std::vector<uint64_t>> in(3, std::vector<uint64_t>(n));
  std::vector<Buffer> bufs;
  for (size_t k = 0; k < 3; ++k) {
    for (auto& x : in[k]) x = random_element(t, rng);
    bufs.emplace_back(t, n, k + 1);
    bufs.back().fill(in[k]);
  }
  Buffer dst(t, n, 0);
  dst.fill(in[0]);
  const void* srcs[] = {bufs[0].ptr(), bufs[1].ptr(), bufs[2].ptr()};
  caravan_status s = CARAVAN_STATUS_INTERNAL;
  switch (op) {
    case Op::kSum: s = ops().sum(inst.ctx, dst.ptr(), bufs[1].ptr(), n, t.id, nullptr); break;
    case Op::kSum2: s = ops().sum2(inst.ctx, dst.ptr(), bufs[0].ptr(), bufs[1].ptr(), n, t.id, nullptr); break;
    case Op::kSumMany: s = ops().sum_many(inst.ctx, dst.ptr(), srcs, 3, n, t.id, nullptr); break;
    case Op::kScale: s = t.is_float ? ops().scale(inst.ctx, dst.ptr(), n, t.id, kFactor, nullptr) : 0; break;
  }
  EXPECT_EQ(s, CARAVAN_STATUS_OK) << inst.host.error;
  EXPECT_TRUE(dst.guards_intact());
  std::vector<uint64_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = dst.get(i);
  return out;
}

TEST(ReducerThreads, TwoThreadsGiveIdenticalResults) {
  Instance one({});
  Instance two({{"THREADS", "2"}, {"MIN_BYTES_PER_THREAD", "4096"}});
  ASSERT_EQ(one.status, CARAVAN_STATUS_OK) << one.host.error;
  ASSERT_EQ(two.status, CARAVAN_STATUS_OK) << two.host.error;
  for (const DType& t : kDTypes)
    for (Op op : {Op::kSum, Op::kSum2, Op::kSumMany, Op::kScale})
      for (size_t n : {size_t{4095}, size_t{100003}, kBig}) {
        if (n == kBig && t.size != 4) continue;
        EXPECT_EQ(run_all_ops(one, t, n, op), run_all_ops(two, t, n, op))
            << t.name << " " << op_name(op) << " " << n;
      }
}

// Several engine threads on one instance: whoever finds the pool busy runs
// alone, and nobody's result suffers.
TEST(ReducerThreads, ConcurrentCallersOnOneInstance) {
  Instance inst({{"THREADS", "3"}, {"MIN_BYTES_PER_THREAD", "1024"}});
  ASSERT_EQ(inst.status, CARAVAN_STATUS_OK) << inst.host.error;
  const size_t n = 200001;
  std::vector<std::thread> callers;
  std::vector<int> failures(4, 0);
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      std::vector<int32_t> dst(n), src(n);
      for (int round = 0; round < 20; ++round) {
        for (size_t i = 0; i < n; ++i) {
          dst[i] = static_cast<int32_t>(i) * c;
          src[i] = round;
        }
        if (ops().sum(inst.ctx, dst.data(), src.data(), n, CARAVAN_INT32, nullptr) != CARAVAN_STATUS_OK) ++failures[c];
        for (size_t i = 0; i < n; ++i)
          if (dst[i] != static_cast<int32_t>(i) * c + round) {
            ++failures[c];
            break;
          }
      }
    });
  for (auto& t : callers) t.join();
  for (int f : failures) EXPECT_EQ(f, 0);
}

// ---- The descriptor, init and errors ----------------------------------------------

TEST(ReducerPlugin, Descriptor) {
  const caravan_plugin_descriptor* d = descriptor();
  ASSERT_NE(d, nullptr) << dlerror();
  EXPECT_EQ(d, reinterpret_cast<caravan_plugin_entry_fn>(
                   dlsym(dlopen(CARAVAN_REDUCER_CPU_PATH, RTLD_NOW | RTLD_NOLOAD), CARAVAN_PLUGIN_ENTRY_SYMBOL))());
  EXPECT_EQ(d->magic, CARAVAN_PLUGIN_MAGIC);
  EXPECT_EQ(d->kind, static_cast<uint32_t>(CARAVAN_PLUGIN_KIND_REDUCER));
  EXPECT_EQ(d->abi_major, static_cast<uint32_t>(CARAVAN_REDUCER_ABI_MAJOR_V1));
  EXPECT_EQ(d->struct_size, sizeof(caravan_plugin_descriptor));
  EXPECT_STREQ(d->name, "cpu");
  EXPECT_EQ(ops().struct_size, sizeof(caravan_reducer_ops_v1));
  std::vector<std::string> names;
  for (size_t i = 0; i < d->num_params; ++i) names.push_back(d->params[i].name);
  EXPECT_EQ(names, (std::vector<std::string>{"KERNEL", "THREADS", "MIN_BYTES_PER_THREAD"}));
}

TEST(ReducerPlugin, AutoPicksTheBestTheCpuHas) {
  Instance inst({});
  ASSERT_EQ(inst.status, CARAVAN_STATUS_OK);
  std::string want = cpu_supports("avx512") ? "avx512" : cpu_supports("avx2") ? "avx2" : "portable";
  EXPECT_EQ(inst.kernel(), want);
  caravan_reducer_properties_v1 p{};
  p.struct_size = sizeof p;
  ASSERT_EQ(ops().properties(inst.ctx, &p), CARAVAN_STATUS_OK);
  EXPECT_EQ(p.caps, CARAVAN_REDUCER_CAP_HOST_MEMORY);
  EXPECT_EQ(p.dtypes, 0xffu);
  // An older caller's smaller struct is filled only as far as it reaches.
  caravan_reducer_properties_v1 small{};
  small.struct_size = offsetof(caravan_reducer_properties_v1, dtypes);
  small.dtypes = 123;
  ASSERT_EQ(ops().properties(inst.ctx, &small), CARAVAN_STATUS_OK);
  EXPECT_EQ(small.caps, CARAVAN_REDUCER_CAP_HOST_MEMORY);
  EXPECT_EQ(small.dtypes, 123u);
  EXPECT_EQ(small.kernel, nullptr);
}

TEST(ReducerPlugin, InitRejectsBadParameters) {
  for (auto params : std::vector<std::map<std::string, std::string>>{
           {{"KERNEL", "sse9"}}, {{"THREADS", "0"}}, {{"THREADS", "two"}}, {{"MIN_BYTES_PER_THREAD", "-1"}}}) {
    Instance inst(params);
    EXPECT_EQ(inst.status, CARAVAN_STATUS_INVALID_ARGUMENT) << params.begin()->first;
    EXPECT_EQ(inst.ctx, nullptr);
    EXPECT_FALSE(inst.host.error.empty());
  }
}

TEST(ReducerPlugin, ForcingAMissingKernelIsUnavailable) {
  for (std::string k : {"avx2", "avx512"}) {
    if (cpu_supports(k)) continue;
    Instance inst({{"KERNEL", k}});
    EXPECT_EQ(inst.status, CARAVAN_STATUS_UNAVAILABLE);
    EXPECT_NE(inst.host.error.find(k), std::string::npos) << inst.host.error;
  }
  if (cpu_supports("avx512")) GTEST_SKIP() << "this CPU has every kernel family, so none can be missing";
}

// sum, sum2, sum_many and scale with a dtype number no enumerator has. A C
// caller can pass one, but C++ calls holding it in a caravan_dtype undefined,
// so the sanitizer's enum check is off for this one function.
__attribute__((no_sanitize("enum"))) std::array<caravan_status, 4> call_with_dtype(void* c, float* x,
                                                                                 const void* const* srcs, int bad) {
  caravan_dtype dt;
  std::memcpy(&dt, &bad, sizeof dt);
  return {ops().sum(c, x, x, 1, dt, nullptr), ops().sum2(c, x, x, x, 1, dt, nullptr),
          ops().sum_many(c, x, srcs, 2, 1, dt, nullptr), ops().scale(c, x, 1, dt, 2.0, nullptr)};
}

TEST(ReducerPlugin, ErrorPaths) {
  Instance inst({});
  ASSERT_EQ(inst.status, CARAVAN_STATUS_OK);
  void* c = inst.ctx;
  float x[4] = {1, 2, 3, 4};
  const void* srcs[] = {x, x};
  const void* holey[] = {x, nullptr};

  EXPECT_EQ(ops().sum(c, nullptr, x, 4, CARAVAN_FLOAT32, nullptr), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().sum(c, x, nullptr, 4, CARAVAN_FLOAT32, nullptr), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().sum(c, nullptr, nullptr, 0, CARAVAN_FLOAT32, nullptr), CARAVAN_STATUS_OK);
  EXPECT_EQ(ops().sum2(c, x, nullptr, x, 4, CARAVAN_FLOAT32, nullptr), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().sum2(c, x, x, nullptr, 4, CARAVAN_FLOAT32, nullptr), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().sum2(c, nullptr, nullptr, nullptr, 0, CARAVAN_INT8, nullptr), CARAVAN_STATUS_OK);
  EXPECT_EQ(ops().sum_many(c, x, nullptr, 2, 4, CARAVAN_FLOAT32, nullptr), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().sum_many(c, x, holey, 2, 4, CARAVAN_FLOAT32, nullptr), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().sum_many(c, x, srcs, 0, 4, CARAVAN_FLOAT32, nullptr), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().sum_many(c, nullptr, holey, 2, 0, CARAVAN_FLOAT32, nullptr), CARAVAN_STATUS_OK);
  EXPECT_EQ(ops().scale(c, nullptr, 4, CARAVAN_FLOAT32, 2.0, nullptr), CARAVAN_STATUS_INVALID_ARGUMENT);
  inst.host.error.clear();
  int stream = 0;
  EXPECT_EQ(ops().sum(c, x, x, 4, CARAVAN_FLOAT32, &stream), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(inst.host.error.find("stream"), std::string::npos) << inst.host.error;

  for (int bad : {8, 42, -1}) {
    inst.host.error.clear();
    std::array<caravan_status, 4> got = call_with_dtype(c, x, srcs, bad);
    for (caravan_status s : got) EXPECT_EQ(s, CARAVAN_STATUS_UNSUPPORTED) << "dtype " << bad;
    EXPECT_NE(inst.host.error.find("dtype " + std::to_string(bad)), std::string::npos) << inst.host.error;
  }
  for (const DType& t : kDTypes)
    if (!t.is_float) {
      inst.host.error.clear();
      EXPECT_EQ(ops().scale(c, x, 1, t.id, 2.0, nullptr), CARAVAN_STATUS_UNSUPPORTED) << t.name;
      EXPECT_FALSE(inst.host.error.empty());
    }
  EXPECT_EQ(x[0], 1.0f) << "a failed call wrote its destination";

  caravan_reducer_properties_v1 p{};
  p.struct_size = sizeof p;
  EXPECT_EQ(ops().properties(nullptr, &p), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().properties(c, nullptr), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().sum(nullptr, x, x, 4, CARAVAN_FLOAT32, nullptr), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops().finalize(nullptr), CARAVAN_STATUS_INVALID_ARGUMENT);
  void* out = nullptr;
  EXPECT_EQ(ops().init(nullptr, &out), CARAVAN_STATUS_INVALID_ARGUMENT);
}

TEST(ReducerPlugin, InitLogsItsChoice) {
  Instance inst({{"KERNEL", std::string("portable")}});
  ASSERT_EQ(inst.status, CARAVAN_STATUS_OK);
  ASSERT_FALSE(inst.host.logs.empty());
  EXPECT_NE(inst.host.logs.back().find("portable"), std::string::npos);
}

}  // namespace
