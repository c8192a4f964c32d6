// Runs a program that must refuse to work (bad environment, wrong token,
// unreachable peer): it must end within its deadline, exit non-zero by
// itself (not by a signal), and say each of `messages`.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "tests/support/process.h"

namespace caravan::test {

inline ProcessResult ExpectRefusal(const ProcessSpec& spec,
                                   std::initializer_list<std::string> messages) {
  ProcessResult r = run_process(spec);
  EXPECT_FALSE(r.timed_out) << r.output;
  EXPECT_GT(r.exit_code, 0) << r.output;
  for (const std::string& m : messages)
    EXPECT_NE(r.output.find(m), std::string::npos) << "missing '" << m << "' in:\n" << r.output;
  return r;
}

}  // namespace caravan::test
