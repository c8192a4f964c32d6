// Each built-in compressor's own promises, driven through the C table of
// its built file: what onebit, topk, randomk and dithering decode to, how
// they read their parameters, and that the random ones are unbiased. What
// every compressor owes (bounded output, determinism, accumulation,
// refusals of foreign bytes and bad arguments) is conformance/compressor's.
//
// Statistical tests draw from a fixed set of seeds, so each gives the same
// answer on every run: it cannot fail by chance from one run to the next.
// Their bounds are chosen so that an unbiased compressor passes for almost
// any fixed set of seeds, and each says how.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "conformance/compressor/compressor_under_test.h"
#include "seed_average.h"

namespace caravan::conformance {
namespace {

using Values = std::vector<double>;

constexpr const char* kOneBit = CARAVAN_COMPRESSOR_ONEBIT_PATH;
constexpr const char* kTopK = CARAVAN_COMPRESSOR_TOPK_PATH;
constexpr const char* kRandomK = CARAVAN_COMPRESSOR_RANDOMK_PATH;
constexpr const char* kDithering = CARAVAN_COMPRESSOR_DITHERING_PATH;

constexpr int kPush = CARAVAN_COMPRESSOR_PUSH;
constexpr int kPull = CARAVAN_COMPRESSOR_PULL;
constexpr uint64_t kSeed = 0xC0FFEE;
constexpr int kDraws = 2000;  // seeds an average of decoded outputs is taken over
uint64_t draw_seed(int i) { return 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1); }

// `n` values of random sign and magnitude 2^(-octaves u), u uniform in
// [0, 1): never zero (so that a decoded zero means "not kept"), distinct
// with probability 1, and spread over the octaves natural dithering's
// levels split.
Values signed_octaves(size_t n, uint64_t seed, double octaves) {
  TestRng rng(seed);
  Values out(n);
  for (double& x : out) {
    double magnitude = std::exp2(-octaves * rng.uniform());
    x = rng.next() & 1 ? -magnitude : magnitude;
  }
  return out;
}

std::vector<size_t> nonzero(const Values& v) {
  std::vector<size_t> out;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != 0) out.push_back(i);
  return out;
}

bool contains(const std::vector<size_t>& sorted, size_t i) {
  return std::binary_search(sorted.begin(), sorted.end(), i);
}

// Expects got[i] within rel * |want(i)| of want(i) (equal when rel is 0)
// for every i, reporting the first element that is not and how many.
template <class Want>
void expect_each(const Values& got, Want want, double rel = 0) {
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::fabs(got[i] - want(i)) <= rel * std::fabs(want(i))) continue;
    if (wrong++ == 0) first = i;
  }
  EXPECT_EQ(wrong, 0u) << "first at element " << first << ": " << got[first] << ", not "
                       << want(first);
}

// create()'s refusal of `params`, whose message must name `key`.
void expect_refused(const char* path, const Params& params, const std::string& key) {
  std::string given;
  for (const auto& [k, v] : params) given += " " + k + "=" + v;
  Compressor c(path, params, CARAVAN_FLOAT32, 1000);
  EXPECT_EQ(c.create_status(), CARAVAN_STATUS_INVALID_ARGUMENT) << "with" << given;
  EXPECT_NE(c.error().find(key), std::string::npos)
      << "with" << given << ", the error does not name " << key << ": " << c.error();
}

// x (already rounded to c's dtype) through compress and decompress.
Values round_trip(Compressor& c, const Values& x, uint64_t seed, int direction) {
  Bytes payload = c.compress(from_doubles(c.dtype(), x), seed, direction);
  return to_doubles(c.dtype(), c.decode(payload, seed, direction));
}

// decompress() of a payload altered to hold what compress() never writes:
// INVALID_ARGUMENT, a reason, and dst as it was (compressor_v1.h).
void expect_foreign_payload_refused(Compressor& c, const Bytes& payload, int direction) {
  Bytes dst = from_doubles(c.dtype(), Values(c.count(), 3.0)), before = dst;
  c.clear_error();
  EXPECT_EQ(c.decompress(payload, dst, true, kSeed, direction), CARAVAN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(c.error(), "");
  EXPECT_TRUE(dst == before) << "dst changed";
}

// One test body per float dtype.
class BuiltIn : public testing::TestWithParam<caravan_dtype> {
 protected:
  double eps() const { return GetParam() == CARAVAN_FLOAT32 ? FLT_EPSILON : DBL_EPSILON; }
  // x as the compressor sees it, rounded to the dtype.
  Values rounded(const Values& x) const {
    return to_doubles(GetParam(), from_doubles(GetParam(), x));
  }
  std::unique_ptr<Compressor> make(const char* path, const Params& params, size_t count) const {
    auto c = std::make_unique<Compressor>(path, params, GetParam(), count);
    EXPECT_EQ(c->failure(), "") << path;
    if (!c->failure().empty()) return nullptr;
    return c;
  }
};

std::string dtype_name(const testing::TestParamInfo<caravan_dtype>& i) {
  return caravan_dtype_name(i.param);
}

// ---- onebit -----------------------------------------------------------------------------

using OneBit = BuiltIn;

TEST_P(OneBit, DecodesTheSignTimesOneWithoutScaling) {
  // 4099: a last word of 3 bits. -0.0 has its sign bit set, so it is
  // negative, as is a value too small to matter.
  Values x = rounded(signed_octaves(4099, kSeed, 20));
  x[0] = -0.0;
  x[1] = 0.0;
  x[2] = -1e-30;
  for (const Params& params : {Params{}, Params{{"byteps_compressor_onebit_scaling", "false"}}}) {
    auto c = make(kOneBit, params, x.size());
    ASSERT_TRUE(c);
    for (int direction : {kPush, kPull}) {
      expect_each(round_trip(*c, x, kSeed, direction),
                  [&](size_t i) { return std::signbit(x[i]) ? -1.0 : 1.0; });
    }
  }
}

TEST_P(OneBit, ScalingDecodesTheMeanMagnitude) {
  Values x = rounded(signed_octaves(4099, kSeed, 20));
  x[0] = -0.0;
  double mean = 0;
  for (double v : x) mean += std::fabs(v);
  mean /= static_cast<double>(x.size());
  auto c = make(kOneBit, {{"byteps_compressor_onebit_scaling", "true"}}, x.size());
  ASSERT_TRUE(c);
  for (int direction : {kPush, kPull}) {
    Values d = round_trip(*c, x, kSeed, direction);
    double scale = std::fabs(d[1]);
    expect_each(d, [&](size_t i) { return std::signbit(x[i]) ? -scale : scale; });
    // Relative 1e-6: the scale travels in the dtype (float32 rounds it by
    // 6e-8) and its sum may add in any order (a few float32 roundings of
    // partial sums); missing one element of 4099, or dividing by another
    // count, is off by more than 2e-4.
    EXPECT_NEAR(scale, mean, 1e-6 * mean);
  }
}

TEST(OneBitFloat32, PayloadIsOneBitPerElementAndAFloat) {
  for (size_t n : {size_t{1}, size_t{31}, size_t{32}, size_t{33}, size_t{1024}, size_t{4095},
                   (size_t{1} << 20) + 3}) {
    SCOPED_TRACE(std::to_string(n) + " elements");
    Compressor c(kOneBit, {}, CARAVAN_FLOAT32, n);
    ASSERT_EQ(c.failure(), "");
    const size_t want = 4 * ((n + 31) / 32) + 4;
    EXPECT_EQ(c.max_bytes(), want);
    EXPECT_EQ(
        c.compress(from_doubles(CARAVAN_FLOAT32, signed_octaves(n, kSeed, 4)), kSeed, kPush).size(),
        want);
    // What the sign bits promise once the scale and the last word's padding
    // are spread over enough elements: 28 times fewer bytes, at least.
    if (n >= 1024) {
      EXPECT_LE(28 * want, 4 * n);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Float, OneBit, testing::Values(CARAVAN_FLOAT32, CARAVAN_FLOAT64),
                         dtype_name);

// ---- topk -------------------------------------------------------------------------------

// The indices of the k largest magnitudes, ties to the lower index (a
// stable sort keeps the lower first), in increasing order.
std::vector<size_t> largest(const Values& x, size_t k) {
  std::vector<size_t> order(x.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return std::fabs(x[a]) > std::fabs(x[b]); });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

using TopK = BuiltIn;

TEST_P(TopK, KeepsTheKLargestMagnitudesWithTheirValues) {
  // A small partition, and one large enough for shortcuts that look at a
  // sample of it first.
  for (size_t n : {size_t{1000}, (size_t{1} << 20) + 3}) {
    SCOPED_TRACE(std::to_string(n) + " elements");
    Values x = rounded(signed_octaves(n, kSeed, 20));
    auto c = make(kTopK, {{"byteps_compressor_k", "0.01"}}, n);
    ASSERT_TRUE(c);
    const std::vector<size_t> kept = largest(x, n / 100);
    // Exactly: the kept values travel as they are, with no arithmetic.
    for (int direction : {kPush, kPull}) {
      Values d = round_trip(*c, x, kSeed, direction);
      EXPECT_EQ(nonzero(d), kept);
      expect_each(d, [&](size_t i) { return contains(kept, i) ? x[i] : 0.0; });
    }
  }
}

TEST_P(TopK, TiesGoToTheLowerIndex) {
  // Two clear winners, then 62 elements of one magnitude.
  Values x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = i % 2 ? -1.0 : 1.0;
  x[50] = 2;
  x[60] = -2;
  struct Case {
    const char* k;
    std::vector<size_t> kept;
  };
  for (const Case& t : {Case{"5", {0, 1, 2, 50, 60}}, Case{"0.1", {0, 1, 2, 3, 50, 60}}}) {
    auto c = make(kTopK, {{"byteps_compressor_k", t.k}}, x.size());
    ASSERT_TRUE(c);
    EXPECT_EQ(nonzero(round_trip(*c, x, kSeed, kPush)), t.kept) << "k = " << t.k;
  }
  // A large partition of three magnitudes (2, 3 and 4), the k-th shared
  // by 29% of it: which of those are kept is the tie rule alone.
  Values many = signed_octaves((size_t{1} << 20) + 3, kSeed, 2);
  for (double& v : many) v = std::copysign(std::ceil(std::fabs(v) * 4), v);
  auto c = make(kTopK, {{"byteps_compressor_k", "0.3"}}, many.size());
  ASSERT_TRUE(c);
  EXPECT_EQ(nonzero(round_trip(*c, many, kSeed, kPush)), largest(many, many.size() * 3 / 10));
}

TEST_P(TopK, ReadsKAsAFractionOfAtLeastOneOrAsACount) {
  struct Case {
    size_t n;
    const char* k;
    size_t kept;
  };
  for (const Case& t : {Case{1000, "0.01", 10}, Case{1000, "0.5", 500}, Case{50, "0.01", 1},
                        Case{150, "0.01", 1}, Case{1000, "3", 3}, Case{50, "7", 7}}) {
    SCOPED_TRACE(std::to_string(t.n) + " elements, k = " + t.k);
    Values x = rounded(signed_octaves(t.n, kSeed, 20));
    auto c = make(kTopK, {{"byteps_compressor_k", t.k}}, t.n);
    ASSERT_TRUE(c);
    EXPECT_EQ(nonzero(round_trip(*c, x, kSeed, kPush)), largest(x, t.kept));
  }
}

TEST_P(TopK, RefusesAnIndexOutOfRange) {
  // The payload starts with k 32-bit indices (topk.cc); the last one is
  // made to point one past the partition.
  Values x = rounded(signed_octaves(100, kSeed, 20));
  auto c = make(kTopK, {{"byteps_compressor_k", "5"}}, x.size());
  ASSERT_TRUE(c);
  Bytes payload = c->compress(from_doubles(c->dtype(), x), kSeed, kPush);
  const uint32_t past_end = 100;
  std::memcpy(&payload[4 * 4], &past_end, 4);
  expect_foreign_payload_refused(*c, payload, kPush);
}

INSTANTIATE_TEST_SUITE_P(Float, TopK, testing::Values(CARAVAN_FLOAT32, CARAVAN_FLOAT64),
                         dtype_name);

// Top-k and random-k read byteps_compressor_k alike.
using TopKAndRandomK = BuiltIn;

TEST_P(TopKAndRandomK, KOfTheCountOrMoreKeepsEverything) {
  // Random-k's pull scale n/k is then 1. 1e30 lies beyond size_t's range.
  Values x = rounded(signed_octaves(100, kSeed, 20));
  for (const char* path : {kTopK, kRandomK}) {
    for (const char* k : {"100", "1000", "1e30"}) {
      auto c = make(path, {{"byteps_compressor_k", k}}, x.size());
      ASSERT_TRUE(c);
      for (int direction : {kPush, kPull})
        EXPECT_EQ(round_trip(*c, x, kSeed, direction), x) << path << ", k = " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Float, TopKAndRandomK, testing::Values(CARAVAN_FLOAT32, CARAVAN_FLOAT64),
                         dtype_name);

TEST(TopKAndRandomKParameters, KMissingNonPositiveOrNotANumberIsRefusedByName) {
  for (const char* path : {kTopK, kRandomK}) {
    SCOPED_TRACE(path);
    expect_refused(path, {}, "byteps_compressor_k");
    for (const char* k : {"0", "-1", "-0.01", "ten"})
      expect_refused(path, {{"byteps_compressor_k", k}}, "byteps_compressor_k");
  }
}

// ---- randomk ----------------------------------------------------------------------------

using RandomK = BuiltIn;

TEST_P(RandomK, TheSeedAloneChoosesTheIndices) {
  const size_t n = 1000;
  Values x = rounded(signed_octaves(n, kSeed, 20)), y = rounded(signed_octaves(n, kSeed + 1, 20));
  auto c = make(kRandomK, {{"byteps_compressor_k", "0.05"}}, n);
  ASSERT_TRUE(c);
  const std::vector<size_t> chosen = nonzero(round_trip(*c, x, kSeed, kPush));
  EXPECT_EQ(chosen.size(), 50u);
  EXPECT_EQ(nonzero(round_trip(*c, y, kSeed, kPush)), chosen) << "other values";
  // The server's sum comes back on the indices the pushes chose.
  EXPECT_EQ(nonzero(round_trip(*c, x, kSeed, kPull)), chosen) << "the pull";
  // Two seeds choosing the same 50 of 1000 happens once in 10^85 pairs.
  for (uint64_t other = 1; other <= 4; ++other)
    EXPECT_NE(nonzero(round_trip(*c, x, kSeed + other, kPush)), chosen) << "seed +" << other;
}

TEST_P(RandomK, PushDecodesUnscaledAndPullScalesByNOverK) {
  // k = 30 of 1000: n/k = 33.3..., exact in no dtype.
  const size_t n = 1000;
  Values x = rounded(signed_octaves(n, kSeed, 20));
  auto c = make(kRandomK, {{"byteps_compressor_k", "0.03"}}, n);
  ASSERT_TRUE(c);
  Values push = round_trip(*c, x, kSeed, kPush);
  const std::vector<size_t> chosen = nonzero(push);
  EXPECT_EQ(chosen.size(), 30u);
  expect_each(push, [&](size_t i) { return contains(chosen, i) ? x[i] : 0.0; });
  Values pull = round_trip(*c, x, kSeed, kPull);
  EXPECT_EQ(nonzero(pull), chosen);
  // Two roundings in the dtype, of n/k and of the product: 2 eps.
  expect_each(
      pull, [&](size_t i) { return contains(chosen, i) ? x[i] * n / 30 : 0.0; }, 2 * eps());
}

// Each element decodes to x n/k with probability k/n, else 0: mean x,
// standard deviation |x| sqrt(n/k - 1). n = 200 and k = 10: every element
// is kept about 100 times in 2000 draws. 5 standard errors over 200
// elements: an unbiased compressor fails for about one fixed set of seeds
// in 10^4.
constexpr size_t kUnbiasedCount = 200;
const Params kTenOf200 = {{"byteps_compressor_k", "0.05"}};
Values randomk_sigma(const Values& mean) {
  Values out;
  for (double m : mean) out.push_back(std::fabs(m) * std::sqrt(20.0 - 1));
  return out;
}

TEST_P(RandomK, PullRoundTripIsUnbiased) {
  Values x = rounded(signed_octaves(kUnbiasedCount, kSeed, 4));
  auto c = make(kRandomK, kTenOf200, kUnbiasedCount);
  ASSERT_TRUE(c);
  SeedAverage average(x);
  for (int i = 0; i < kDraws; ++i) average.add(round_trip(*c, x, draw_seed(i), kPull));
  average.expect_unbiased(randomk_sigma(x), eps());
}

TEST_P(RandomK, RoundOfTwoWorkersIsUnbiasedForTheSum) {
  // As the engine runs a round: each worker pushes, the server adds the
  // decoded pushes into its sum and compresses that for the pull, and a
  // worker decodes the pull.
  const size_t n = kUnbiasedCount;
  Values x1 = rounded(signed_octaves(n, kSeed, 4)), x2 = rounded(signed_octaves(n, kSeed + 1, 4));
  auto worker1 = make(kRandomK, kTenOf200, n), worker2 = make(kRandomK, kTenOf200, n),
       server = make(kRandomK, kTenOf200, n);
  ASSERT_TRUE(worker1 && worker2 && server);
  Values sum(n);
  for (size_t i = 0; i < n; ++i) sum[i] = x1[i] + x2[i];
  SeedAverage average(sum);
  for (int i = 0; i < kDraws; ++i) {
    const uint64_t seed = draw_seed(i);
    Bytes pushed1 = worker1->compress(from_doubles(worker1->dtype(), x1), seed, kPush);
    Bytes pushed2 = worker2->compress(from_doubles(worker2->dtype(), x2), seed, kPush);
    Bytes total(server->tensor_bytes(), 0);  // +0.0 in both dtypes
    ASSERT_EQ(server->decompress(pushed1, total, true, seed, kPush), CARAVAN_STATUS_OK);
    ASSERT_EQ(server->decompress(pushed2, total, true, seed, kPush), CARAVAN_STATUS_OK);
    Bytes answer = server->compress(total, seed, kPull);
    average.add(to_doubles(worker1->dtype(), worker1->decode(answer, seed, kPull)));
  }
  average.expect_unbiased(randomk_sigma(sum), eps());
}

INSTANTIATE_TEST_SUITE_P(Float, RandomK, testing::Values(CARAVAN_FLOAT32, CARAVAN_FLOAT64),
                         dtype_name);

// ---- dithering --------------------------------------------------------------------------

struct Dither {
  int levels;
  bool natural;  // byteps_dithering_partition=1
  bool l2;       // byteps_dithering_normalize=1

  Params params() const {
    return {{"byteps_compressor_k", std::to_string(levels)},
            {"byteps_dithering_partition", natural ? "1" : "0"},
            {"byteps_dithering_normalize", l2 ? "1" : "0"}};
  }
  std::string name() const {
    return std::to_string(levels) + (natural ? " natural" : " linear") +
           (l2 ? " levels of l2" : " levels of max");
  }
  // What |x| is measured against.
  double norm(const Values& x) const {
    double n = 0;
    for (double v : x) n = l2 ? n + v * v : std::fmax(n, std::fabs(v));
    return l2 ? std::sqrt(n) : n;
  }
  // The levels of |x| / norm, increasing: l/s, or 0 and 2^-j for j < s.
  Values grid() const {
    Values out = {0};
    for (int l = 1; l <= levels; ++l)
      out.push_back(natural ? std::ldexp(1.0, l - levels) : static_cast<double>(l) / levels);
    return out;
  }
  // The levels either side of r, the two a draw may round it to.
  std::pair<double, double> bracket(double r) const {
    Values g = grid();
    auto above = std::lower_bound(g.begin(), g.end(), r);
    if (above == g.end()) return {g.back(), g.back()};
    if (*above == r) return {r, r};
    return {*(above - 1), *above};
  }
};

const Dither kEveryPartitionAndNorm[] = {
    {4, false, false}, {4, false, true}, {4, true, false}, {4, true, true}};

using Dithering = BuiltIn;

TEST_P(Dithering, IsUnbiasedForEveryPartitionAndNorm) {
  // Six octaves of magnitude, so that natural levels are all used.
  Values x = rounded(signed_octaves(kUnbiasedCount, kSeed, 6));
  for (const Dither& d : kEveryPartitionAndNorm) {
    auto c = make(kDithering, d.params(), x.size());
    ASSERT_TRUE(c);
    // r = |x| / norm lies between levels a and b and rounds to b with
    // probability (r - a) / (b - a): standard deviation
    // norm sqrt((r - a)(b - r)). 5 standard errors over 200 elements, as
    // random-k's.
    const double norm = d.norm(x);
    Values sigma;
    for (double v : x) {
      auto [a, b] = d.bracket(std::fabs(v) / norm);
      sigma.push_back(norm * std::sqrt((std::fabs(v) / norm - a) * (b - std::fabs(v) / norm)));
    }
    for (int direction : {kPush, kPull}) {
      SCOPED_TRACE(d.name() + (direction == kPull ? ", PULL" : ", PUSH"));
      SeedAverage average(x);
      for (int i = 0; i < kDraws; ++i) average.add(round_trip(*c, x, draw_seed(i), direction));
      average.expect_unbiased(sigma, eps());
    }
  }
}

TEST_P(Dithering, DecodesToTheNormTimesALevelEitherSideOfTheInput) {
  Values x = rounded(signed_octaves(4099, kSeed, 12));
  x[0] = 0.0;
  x[1] = -0.0;
  for (int levels : {1, 4, 30}) {
    for (bool natural : {false, true}) {
      for (bool l2 : {false, true}) {
        const Dither d{levels, natural, l2};
        auto c = make(kDithering, d.params(), x.size());
        ASSERT_TRUE(c);
        const double norm = d.norm(x);
        for (int direction : {kPush, kPull}) {
          SCOPED_TRACE(d.name() + (direction == kPull ? ", PULL" : ", PUSH"));
          Values got = round_trip(*c, x, kSeed, direction);
          // The decoded value is norm * level rounded to the dtype: eps of it.
          size_t wrong = 0, first = 0;
          for (size_t i = 0; i < x.size(); ++i) {
            auto [a, b] = d.bracket(std::fabs(x[i]) / norm);
            auto is = [&](double level) {
              return std::fabs(std::fabs(got[i]) - norm * level) <= eps() * norm * level;
            };
            bool sign_kept = got[i] == 0 || std::signbit(got[i]) == std::signbit(x[i]);
            if ((is(a) || is(b)) && sign_kept) continue;
            if (wrong++ == 0) first = i;
          }
          EXPECT_EQ(wrong, 0u) << "first at element " << first << ": " << x[first] << " decoded as "
                               << got[first] << ", norm " << norm;
        }
      }
    }
  }
}

TEST_P(Dithering, RefusesALevelAboveK) {
  // After the 8-byte norm come fields of a sign bit and 3 bits of level
  // for k = 4 (dithering.cc): all ones is level 7.
  Values x = rounded(signed_octaves(100, kSeed, 6));
  auto c = make(kDithering, {{"byteps_compressor_k", "4"}}, x.size());
  ASSERT_TRUE(c);
  Bytes payload = c->compress(from_doubles(c->dtype(), x), kSeed, kPull);
  payload[8] = 0xFF;
  expect_foreign_payload_refused(*c, payload, kPull);
}

INSTANTIATE_TEST_SUITE_P(Float, Dithering, testing::Values(CARAVAN_FLOAT32, CARAVAN_FLOAT64),
                         dtype_name);

TEST(DitheringParameters, LevelsOtherThanAWholeNumberFrom1To30AreRefusedByName) {
  expect_refused(kDithering, {}, "byteps_compressor_k");
  for (const char* k : {"0", "31", "2.5", "-4"})
    expect_refused(kDithering, {{"byteps_compressor_k", k}}, "byteps_compressor_k");
}

TEST(DitheringParameters, PartitionAndNormalizeOtherThan0Or1AreRefusedByName) {
  for (const char* key : {"byteps_dithering_partition", "byteps_dithering_normalize"})
    for (const char* value : {"2", "-1", "0.5", "natural"})
      expect_refused(kDithering, {{"byteps_compressor_k", "4"}, {key, value}}, key);
}

}  // namespace
}  // namespace caravan::conformance
