// What is particular to the CPU reducer: its parameters (kernel choice,
// threads), its thread pool and its refusal of streams. The arithmetic of
// every kernel family, the error codes and the descriptor rules every
// reducer shares are checked by conformance/reducer.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "caravan/plugin/plugin.h"
#include "caravan/plugin/reducer_v1.h"
#include "conformance/reducer/reducer_plugin.h"

namespace {

namespace conformance = caravan::conformance;

constexpr char kPath[] = CARAVAN_REDUCER_CPU_PATH;
using ReducerCpu = conformance::ReducerPluginTest<kPath>;

// One reducer instance, which sees no environment; `status` is what init returned.
struct Instance : conformance::Instance {
  explicit Instance(conformance::Params params)
      : conformance::Instance(ReducerCpu::ops(), std::move(params), conformance::Params{}) {}
  std::string kernel() {
    caravan_reducer_properties_v1 p{};
    p.struct_size = sizeof p;
    EXPECT_EQ(ops.properties(ctx, &p), CARAVAN_STATUS_OK);
    return p.kernel ? p.kernel : "";
  }
};

bool cpu_supports(const std::string& kernel) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
              __builtin_cpu_supports("fma");
  if (kernel == "avx2") return avx2;
  if (kernel == "avx512")
    return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#endif
  return kernel == "portable" || kernel == "auto";
}

// ---- The descriptor and the parameters ------------------------------------------

TEST_F(ReducerCpu, DeclaresItsParameters) {
  const caravan_plugin_descriptor* d = plugin().descriptor;
  ASSERT_NE(d, nullptr) << plugin().error;
  EXPECT_STREQ(d->name, "cpu");
  std::vector<std::string> names;
  for (size_t i = 0; i < d->num_params; ++i) names.push_back(d->params[i].name);
  EXPECT_EQ(names, (std::vector<std::string>{"KERNEL", "THREADS", "MIN_BYTES_PER_THREAD"}));
}

TEST_F(ReducerCpu, AutoPicksTheBestTheCpuHas) {
  Instance inst({});
  ASSERT_EQ(inst.status, CARAVAN_STATUS_OK);
  std::string want = cpu_supports("avx512") ? "avx512" : cpu_supports("avx2") ? "avx2" : "portable";
  EXPECT_EQ(inst.kernel(), want);
  caravan_reducer_properties_v1 p{};
  p.struct_size = sizeof p;
  ASSERT_EQ(ops().properties(inst.ctx, &p), CARAVAN_STATUS_OK);
  EXPECT_EQ(p.caps, CARAVAN_REDUCER_CAP_HOST_MEMORY);
  EXPECT_EQ(p.dtypes, 0xffu);
}

TEST_F(ReducerCpu, ForcedKernelIsTheOneUsed) {
  for (std::string k : {"portable", "avx2", "avx512"}) {
    if (!cpu_supports(k)) continue;
    Instance inst({{"KERNEL", k}});
    ASSERT_EQ(inst.status, CARAVAN_STATUS_OK) << inst.host.error();
    EXPECT_EQ(inst.kernel(), k);
  }
}

TEST_F(ReducerCpu, ForcingAMissingKernelIsUnavailable) {
  for (std::string k : {"avx2", "avx512"}) {
    if (cpu_supports(k)) continue;
    Instance inst({{"KERNEL", k}});
    EXPECT_EQ(inst.status, CARAVAN_STATUS_UNAVAILABLE);
    EXPECT_NE(inst.host.error().find(k), std::string::npos) << inst.host.error();
  }
  if (cpu_supports("avx512"))
    GTEST_SKIP() << "this CPU has every kernel family, so none can be missing";
}

TEST_F(ReducerCpu, InitRejectsBadParameters) {
  for (auto params :
       std::vector<std::map<std::string, std::string>>{{{"KERNEL", "sse9"}},
                                                       {{"THREADS", "0"}},
                                                       {{"THREADS", "257"}},
                                                       {{"THREADS", "two"}},
                                                       {{"MIN_BYTES_PER_THREAD", "-1"}}}) {
    Instance inst(params);
    EXPECT_EQ(inst.status, CARAVAN_STATUS_INVALID_ARGUMENT) << params.begin()->first;
    EXPECT_EQ(inst.ctx, nullptr);
    EXPECT_NE(inst.host.error().find(params.begin()->first), std::string::npos)
        << inst.host.error();
  }
}

TEST_F(ReducerCpu, InitLogsItsChoice) {
  Instance inst({{"KERNEL", "portable"}, {"THREADS", "2"}});
  ASSERT_EQ(inst.status, CARAVAN_STATUS_OK);
  std::vector<std::string> logs = inst.host.lines();
  ASSERT_FALSE(logs.empty());
  EXPECT_NE(logs.back().find("portable"), std::string::npos) << logs.back();
  EXPECT_NE(logs.back().find("2 thread"), std::string::npos) << logs.back();
}

// Host memory only: a stream means the caller took this for a GPU reducer.
TEST_F(ReducerCpu, RefusesAStream) {
  Instance inst({});
  ASSERT_EQ(inst.status, CARAVAN_STATUS_OK);
  float x[4] = {1, 2, 3, 4};
  int stream = 0;
  EXPECT_EQ(ops().sum(inst.ctx, x, x, 4, CARAVAN_FLOAT32, &stream),
            CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(inst.host.error().find("stream"), std::string::npos) << inst.host.error();
  EXPECT_EQ(x[0], 1.0f);
}

// ---- Threads ----------------------------------------------------------------------

bool is_float(int dt) {
  return dt == CARAVAN_FLOAT32 || dt == CARAVAN_FLOAT64 || dt == CARAVAN_FLOAT16 ||
         dt == CARAVAN_BFLOAT16;
}

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n + 8);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull | 1;
  for (size_t i = 0; i < n; i += 8) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    std::memcpy(&v[i], &s, 8);
  }
  v.resize(n);
  return v;
}

// Runs one op on `inst` over fixed random inputs; returns the destination.
std::vector<uint8_t> run_op(Instance& inst, int dt, size_t n, int op) {
  size_t bytes = n * caravan_dtype_size(dt);
  std::vector<uint8_t> a = random_bytes(bytes, n + 1), b = random_bytes(bytes, n + 2),
                       c = random_bytes(bytes, n + 3), dst = a;
  auto dtype = static_cast<caravan_dtype>(dt);
  const void* srcs[] = {a.data(), b.data(), c.data()};
  caravan_status s = CARAVAN_STATUS_INTERNAL;
  switch (op) {
    case 0:
      s = inst.ops.sum(inst.ctx, dst.data(), b.data(), n, dtype, nullptr);
      break;
    case 1:
      s = inst.ops.sum2(inst.ctx, dst.data(), b.data(), c.data(), n, dtype, nullptr);
      break;
    case 2:
      s = inst.ops.sum_many(inst.ctx, dst.data(), srcs, 3, n, dtype, nullptr);
      break;
    default:
      s = is_float(dt) ? inst.ops.scale(inst.ctx, dst.data(), n, dtype, 0.7, nullptr) : 0;
      break;
  }
  EXPECT_EQ(s, CARAVAN_STATUS_OK) << inst.host.error();
  return dst;
}

// The split is element-wise and on cache-line boundaries, so threads change
// no bit of any result, NaN payloads included.
TEST_F(ReducerCpu, TwoThreadsGiveIdenticalResults) {
  Instance one({});
  Instance two({{"THREADS", "2"}, {"MIN_BYTES_PER_THREAD", "4096"}});
  ASSERT_EQ(one.status, CARAVAN_STATUS_OK) << one.host.error();
  ASSERT_EQ(two.status, CARAVAN_STATUS_OK) << two.host.error();
  for (int dt = 0; dt < CARAVAN_DTYPE_COUNT; ++dt)
    for (int op = 0; op < 4; ++op)
      for (size_t n : {size_t{4095}, size_t{100003}, (size_t{1} << 20) + 3}) {
        EXPECT_EQ(run_op(one, dt, n, op), run_op(two, dt, n, op))
            << "dtype " << dt << ", op " << op << ", " << n;
      }
}

// Several summation threads on one instance: whoever finds the pool busy runs
// alone, and nobody's result suffers.
TEST_F(ReducerCpu, ConcurrentCallersOnOneInstance) {
  Instance inst({{"THREADS", "3"}, {"MIN_BYTES_PER_THREAD", "1024"}});
  ASSERT_EQ(inst.status, CARAVAN_STATUS_OK) << inst.host.error();
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
        if (ops().sum(inst.ctx, dst.data(), src.data(), n, CARAVAN_INT32, nullptr) !=
            CARAVAN_STATUS_OK)
          ++failures[c];
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

}  // namespace
