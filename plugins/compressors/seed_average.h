// Whether a random compressor is unbiased: its decoded outputs averaged
// over many seeds, held against the values they estimate.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace caravan::conformance {

class SeedAverage {
 public:
  explicit SeedAverage(std::vector<double> want)
      : want_(std::move(want)), sum_(want_.size()), sum_sq_(want_.size()), max_abs_(want_.size()) {}

  // Sums the draws' deviations from `want`, not the draws: 2000 copies of
  // an exact value then add up to exactly 0, where their plain sum would
  // carry 2000 roundings of its own.
  void add(const std::vector<double>& draw) {
    for (size_t i = 0; i < want_.size(); ++i) {
      double d = draw[i] - want_[i];
      sum_[i] += d;
      sum_sq_[i] += d * d;
      max_abs_[i] = std::fmax(max_abs_[i], std::fabs(draw[i]));
    }
    ++draws_;
  }

  // Expects every element's mean within 5 of its standard errors (estimated
  // from the draws) of `want`, plus the draws' own rounding: each was
  // rounded to the dtype, by at most eps/2 of its magnitude. Then expects
  // the mean absolute deviation below 1.5 times what unbiased draws of
  // standard deviations `sigma` (the compressor's, worked out by the
  // caller) give on average, sqrt(2/pi) sigma / sqrt(draws): over 200
  // elements that average varies by about 5% of itself, so 1.5 times is
  // far out for an unbiased compressor, and a bias shared by many elements
  // shows there before it reaches 5 standard errors in any one.
  void expect_unbiased(const std::vector<double>& sigma, double eps) const {
    const double n = static_cast<double>(draws_);
    double deviation = 0, expected = 0;
    for (size_t i = 0; i < want_.size(); ++i) {
      double bias = sum_[i] / n;
      double variance = std::fmax(0.0, (sum_sq_[i] - n * bias * bias) / (n - 1));
      double standard_error = std::sqrt(variance / n);
      EXPECT_LE(std::fabs(bias), 5 * standard_error + eps * max_abs_[i])
          << "element " << i << ": " << want_[i] + bias << " over " << draws_ << " seeds, for "
          << want_[i] << " (standard error " << standard_error << ")";
      deviation += std::fabs(bias);
      expected += std::sqrt(2 / M_PI) * sigma[i] / std::sqrt(n);
    }
    EXPECT_LE(deviation, 1.5 * expected)
        << "mean absolute deviation " << deviation / want_.size() << ", where unbiased draws give "
        << expected / want_.size() << " on average";
  }

 private:
  std::vector<double> want_, sum_, sum_sq_, max_abs_;
  size_t draws_ = 0;
};

}  // namespace caravan::conformance
