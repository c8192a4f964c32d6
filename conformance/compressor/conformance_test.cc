// The compressor conformance suite: every compressor plugin the build made,
// driven through its C table as the engine drives it, against what
// compressor_v1.h promises whatever the algorithm: bounded output,
// determinism, accumulation, refusal of bytes that are not its own, no
// alignment needed, and argument checks. One test per (plugin, dtype,
// property); each covers every count below and both directions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "compressor_under_test.h"
#include "variants.h"

namespace caravan::conformance {
namespace {

// One element, a few under a word of bits, a page's worth less one, and a
// large partition that is no multiple of anything.
constexpr size_t kCounts[] = {1, 7, 4095, (size_t{1} << 20) + 3};
constexpr int kDirections[] = {CARAVAN_COMPRESSOR_PUSH, CARAVAN_COMPRESSOR_PULL};
constexpr uint64_t kSeed = 0x5EED5EED12345678ull;
constexpr uint64_t kOtherSeed = 7;
constexpr uint8_t kCanary = 0xA5;

struct Param {
  Variant variant;
  caravan_dtype dtype;
};

void PrintTo(const Param& p, std::ostream* os) {
  *os << p.variant.name << "/" << caravan_dtype_name(p.dtype);
}

std::vector<Param> all_params() {
  std::vector<Param> out;
  for (const Variant& v : all_variants())
    for (caravan_dtype t : {CARAVAN_FLOAT32, CARAVAN_FLOAT64}) out.push_back({v, t});
  return out;
}

class CompressorConformance : public testing::TestWithParam<Param> {
 protected:
  // A compressor need not take both float types (the SDK's example takes
  // float32 only): one that refuses the dtype as UNSUPPORTED is skipped,
  // saying so; any other refusal fails in the test.
  void SetUp() override {
    const Param& p = GetParam();
    Compressor probe(p.variant.path, p.variant.params, p.dtype, 7);
    if (probe.create_status() == CARAVAN_STATUS_UNSUPPORTED)
      GTEST_SKIP() << p.variant.name << " does not compress " << caravan_dtype_name(p.dtype) << ": "
                   << probe.failure();
  }
  // A state for `count` elements; null (and a failure) when the plugin
  // refuses the parameters of all_variants().
  std::unique_ptr<Compressor> make(size_t count) {
    const Param& p = GetParam();
    auto c = std::make_unique<Compressor>(p.variant.path, p.variant.params, p.dtype, count);
    EXPECT_EQ(c->failure(), "") << p.variant.name << " with " << count << " elements";
    if (!c->failure().empty()) return nullptr;
    return c;
  }
  // Runs body(state, count, direction) on a new state for every count and
  // direction, tracing which; a state the plugin refuses is a failure.
  template <class Body>
  void for_every_case(Body body) {
    for (size_t count : kCounts) {
      for (int direction : kDirections) {
        SCOPED_TRACE(std::to_string(count) + " elements, " + (direction ? "PULL" : "PUSH"));
        auto c = make(count);
        if (c) body(*c, count, direction);
      }
    }
  }
  Bytes input(size_t count, uint64_t seed) const {
    return from_doubles(GetParam().dtype, random_values(count, seed));
  }
  // An element's bytes, for messages that say where two tensors differ.
  double element(const Bytes& tensor, size_t i) const {
    size_t size = caravan_dtype_size(GetParam().dtype);
    return to_doubles(GetParam().dtype,
                      Bytes(tensor.begin() + i * size, tensor.begin() + (i + 1) * size))[0];
  }
  // Equal bytes; else the first element that differs.
  void expect_same_tensor(const Bytes& got, const Bytes& want, const std::string& what) const {
    ASSERT_EQ(got.size(), want.size()) << what;
    if (got == want) return;
    size_t size = caravan_dtype_size(GetParam().dtype);
    size_t i = 0;
    while (std::memcmp(&got[i * size], &want[i * size], size) == 0) ++i;
    ADD_FAILURE() << what << ": element " << i << " is " << element(got, i) << ", not "
                  << element(want, i);
  }
};

TEST_P(CompressorConformance, CreatesEveryCountWithARoomyPayload) {
  for (size_t count : kCounts) {
    auto c = make(count);
    ASSERT_TRUE(c);
    EXPECT_GT(c->max_bytes(), 0u) << count << " elements";
  }
}

TEST_P(CompressorConformance, CompressWritesAtMostMaxBytes) {
  for_every_case([&](Compressor& c, size_t count, int direction) {
    Bytes x = input(count, kSeed);
    // The canary past max_bytes catches a write the length would hide.
    Bytes dst(c.max_bytes() + 64, kCanary);
    size_t len = 0;
    ASSERT_EQ(c.ops().compress(c.ctx(), c.state(), x.data(), dst.data(), &len, kSeed, direction),
              CARAVAN_STATUS_OK)
        << c.error();
    EXPECT_LE(len, c.max_bytes());
    for (size_t i = c.max_bytes(); i < dst.size(); ++i)
      ASSERT_EQ(dst[i], kCanary) << "byte " << i << " past max_bytes " << c.max_bytes();
  });
}

TEST_P(CompressorConformance, CompressIsAFunctionOfInputSeedAndDirection) {
  for_every_case([&](Compressor& c, size_t count, int direction) {
    Bytes x = input(count, kSeed);
    Bytes first = c.compress(x, kSeed, direction);
    // Another seed in between: whatever the state keeps from a call must
    // not change the next (every worker and the server must agree).
    c.compress(input(count, kOtherSeed), kOtherSeed, direction);
    EXPECT_TRUE(c.compress(x, kSeed, direction) == first) << "the same state, called again";
    auto fresh = make(count);
    ASSERT_TRUE(fresh);
    EXPECT_TRUE(fresh->compress(x, kSeed, direction) == first) << "another state";
  });
}

TEST_P(CompressorConformance, DecompressOverwritesOrAddsToDst) {
  const double eps = GetParam().dtype == CARAVAN_FLOAT32 ? FLT_EPSILON : DBL_EPSILON;
  for_every_case([&](Compressor& c, size_t count, int direction) {
    Bytes payload = c.compress(input(count, kSeed), kSeed, direction);
    Bytes decoded = c.decode(payload, kSeed, direction);
    // accumulate=0 does not read dst: what was there cannot show.
    Bytes over = input(count, kOtherSeed);
    ASSERT_EQ(c.decompress(payload, over, false, kSeed, direction), CARAVAN_STATUS_OK);
    expect_same_tensor(over, decoded, "decoded over other values");
    // accumulate=1 adds: one rounding of the sum, at most eps/2 of it,
    // bounded here by eps times the operands' magnitudes.
    Bytes prior = input(count, kOtherSeed);
    Bytes sum = prior;
    ASSERT_EQ(c.decompress(payload, sum, true, kSeed, direction), CARAVAN_STATUS_OK) << c.error();
    std::vector<double> p = to_doubles(c.dtype(), prior), d = to_doubles(c.dtype(), decoded),
                        s = to_doubles(c.dtype(), sum);
    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < count; ++i) {
      if (std::fabs(s[i] - (p[i] + d[i])) <= eps * (std::fabs(p[i]) + std::fabs(d[i]))) continue;
      if (wrong++ == 0) first = i;
    }
    EXPECT_EQ(wrong, 0u) << "first at element " << first << ": " << p[first] << " + " << d[first]
                         << " accumulated to " << s[first];
  });
}

TEST_P(CompressorConformance, RefusesAPayloadOfTheWrongLength) {
  for_every_case([&](Compressor& c, size_t count, int direction) {
    Bytes payload = c.compress(input(count, kSeed), kSeed, direction);
    Bytes longer = payload;
    longer.push_back(0);
    std::vector<Bytes> wrong = {longer};
    // Its own copy, so that a read past the end shows under ASan.
    if (!payload.empty()) wrong.emplace_back(payload.begin(), payload.end() - 1);
    for (const Bytes& bad : wrong) {
      for (bool accumulate : {false, true}) {
        Bytes dst = input(count, kOtherSeed), before = dst;
        c.clear_error();
        EXPECT_EQ(c.decompress(bad, dst, accumulate, kSeed, direction),
                  CARAVAN_STATUS_INVALID_ARGUMENT)
            << bad.size() << " bytes where compress wrote " << payload.size();
        EXPECT_NE(c.error(), "");
        expect_same_tensor(dst, before, "dst after a refused payload");
      }
    }
  });
}

TEST_P(CompressorConformance, MisalignedArraysGiveTheSameResults) {
  for_every_case([&](Compressor& c, size_t count, int direction) {
    Bytes x = input(count, kSeed);
    Bytes payload = c.compress(x, kSeed, direction);
    Bytes decoded = c.decode(payload, kSeed, direction);
    // Every array one byte past an aligned address.
    Bytes src(x.size() + 1), dst(c.max_bytes() + 1);
    std::memcpy(src.data() + 1, x.data(), x.size());
    size_t len = 0;
    ASSERT_EQ(c.ops().compress(c.ctx(), c.state(), src.data() + 1, dst.data() + 1, &len, kSeed,
                               direction),
              CARAVAN_STATUS_OK)
        << c.error();
    ASSERT_EQ(len, payload.size());
    EXPECT_TRUE(std::equal(payload.begin(), payload.end(), dst.begin() + 1))
        << "compress from and to misaligned arrays wrote other bytes";
    Bytes out(c.tensor_bytes() + 1);
    ASSERT_EQ(c.ops().decompress(c.ctx(), c.state(), dst.data() + 1, len, out.data() + 1, 0, kSeed,
                                 direction),
              CARAVAN_STATUS_OK)
        << c.error();
    expect_same_tensor(Bytes(out.begin() + 1, out.end()), decoded, "decoded to a misaligned dst");
  });
}

TEST_P(CompressorConformance, RefusesNullArguments) {
  auto c = make(7);
  ASSERT_TRUE(c);
  const caravan_compressor_ops_v1& ops = c->ops();
  const int push = CARAVAN_COMPRESSOR_PUSH;
  Bytes x = input(7, kSeed), payload = c->compress(x, kSeed, push);
  Bytes dst(c->max_bytes()), out(c->tensor_bytes());
  size_t len = 0, max_bytes = 0;
  void* state = nullptr;
  const caravan_dtype t = GetParam().dtype;
  const caravan_compressor_param_v1 k = {"byteps_compressor_k", "1"};

  FakeHost host("compressor");
  EXPECT_EQ(ops.init(host.table(), nullptr), CARAVAN_STATUS_INVALID_ARGUMENT);

  // Without an instance there is no host to explain to; with one, every
  // refusal says why.
  EXPECT_EQ(ops.create(nullptr, &k, 1, t, 7, &state, &max_bytes), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops.compress(nullptr, c->state(), x.data(), dst.data(), &len, kSeed, push),
            CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(ops.decompress(nullptr, c->state(), payload.data(), payload.size(), out.data(), 0,
                           kSeed, push),
            CARAVAN_STATUS_INVALID_ARGUMENT);
  auto check = [&](const char* what, caravan_status status) {
    EXPECT_EQ(status, CARAVAN_STATUS_INVALID_ARGUMENT) << what;
    EXPECT_NE(c->error(), "") << what << " was refused without a word";
    c->clear_error();
  };
  c->clear_error();
  check("create, NULL state_out", ops.create(c->ctx(), &k, 1, t, 7, nullptr, &max_bytes));
  check("create, NULL max_bytes_out", ops.create(c->ctx(), &k, 1, t, 7, &state, nullptr));
  check("create, NULL params with 1 of them",
        ops.create(c->ctx(), nullptr, 1, t, 7, &state, &max_bytes));
  check("compress, NULL state",
        ops.compress(c->ctx(), nullptr, x.data(), dst.data(), &len, kSeed, push));
  check("compress, NULL src",
        ops.compress(c->ctx(), c->state(), nullptr, dst.data(), &len, kSeed, push));
  check("compress, NULL dst",
        ops.compress(c->ctx(), c->state(), x.data(), nullptr, &len, kSeed, push));
  check("compress, NULL len_out",
        ops.compress(c->ctx(), c->state(), x.data(), dst.data(), nullptr, kSeed, push));
  check("decompress, NULL state", ops.decompress(c->ctx(), nullptr, payload.data(), payload.size(),
                                                 out.data(), 0, kSeed, push));
  check("decompress, NULL src",
        ops.decompress(c->ctx(), c->state(), nullptr, payload.size(), out.data(), 0, kSeed, push));
  check("decompress, NULL dst", ops.decompress(c->ctx(), c->state(), payload.data(), payload.size(),
                                               nullptr, 0, kSeed, push));
}

TEST_P(CompressorConformance, RefusesADirectionOtherThanPushOrPull) {
  auto c = make(4095);
  ASSERT_TRUE(c);
  Bytes x = input(4095, kSeed), payload = c->compress(x, kSeed, CARAVAN_COMPRESSOR_PUSH);
  for (int direction : {2, -1}) {
    SCOPED_TRACE("direction " + std::to_string(direction));
    Bytes dst(c->max_bytes());
    size_t len = 0;
    c->clear_error();
    EXPECT_EQ(c->ops().compress(c->ctx(), c->state(), x.data(), dst.data(), &len, kSeed, direction),
              CARAVAN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(c->error(), "");
    Bytes out = input(4095, kOtherSeed), before = out;
    c->clear_error();
    EXPECT_EQ(c->decompress(payload, out, false, kSeed, direction),
              CARAVAN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(c->error(), "");
    expect_same_tensor(out, before, "dst after a refused direction");
  }
}

INSTANTIATE_TEST_SUITE_P(AllCompressors, CompressorConformance, testing::ValuesIn(all_params()),
                         [](const testing::TestParamInfo<Param>& i) {
                           return i.param.variant.name + "_" + caravan_dtype_name(i.param.dtype);
                         });

}  // namespace
}  // namespace caravan::conformance
