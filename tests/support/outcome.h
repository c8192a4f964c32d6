// How a program run for a test must end, as a GoogleTest assertion:
//   ASSERT_TRUE(Succeeded(r));
// fails, with the program's output, unless it ended by itself within its
// deadline with exit code 0.
#pragma once

#include <gtest/gtest.h>

#include "tests/support/process.h"

namespace caravan::test {

inline ::testing::AssertionResult Succeeded(const ProcessResult& r) {
  if (r.timed_out)
    return ::testing::AssertionFailure() << "still running after " << r.seconds << " s:\n"
                                         << r.output;
  if (r.exit_code != 0)
    return ::testing::AssertionFailure()
           << "exit code " << r.exit_code << ", signal " << r.signal << ":\n"
           << r.output;
  return ::testing::AssertionSuccess();
}

}  // namespace caravan::test
