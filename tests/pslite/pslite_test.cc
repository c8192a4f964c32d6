// Runs the ps-lite programs in every role under caravan-launch --spmd, with
// 1 to 4 servers and workers.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "tests/support/process.h"

namespace caravan::test {
namespace {

struct Program {
  const char* name;
  const char* path;
  const char* success;  // printed once per checking node
  bool every_role;      // printed by every node, not just workers
  int per_worker;       // lines per worker (customers)
};

const Program kPrograms[] = {
    {"DefaultHandle", PSLITE_KV_DEFAULT_HANDLE, "push, pull and push_pull sums exact", false, 1},
    {"CustomHandle", PSLITE_KV_CUSTOM_HANDLE, "lens, zero-copy calls, command and callbacks correct",
     false, 1},
    {"SimpleAppGroups", PSLITE_SIMPLE_APP_GROUPS,
     "SimpleApp requests to every group answered exactly once", true, 1},
    {"TwoCustomers", PSLITE_TWO_CUSTOMERS, "sums came back to the right customer", false, 2},
};

using Param = std::tuple<int, int, int>;  // program, workers, servers

class PsLiteJob : public ::testing::TestWithParam<Param> {};

TEST_P(PsLiteJob, RunsUnchangedInEveryRole) {
  const Program& p = kPrograms[std::get<0>(GetParam())];
  int workers = std::get<1>(GetParam()), servers = std::get<2>(GetParam());
  ProcessSpec spec;
  spec.argv = {CARAVAN_LAUNCH_BIN, "--spmd",   "--workers", std::to_string(workers),
               "--servers",        std::to_string(servers), "--", p.path};
  spec.timeout_s = 120;
  ProcessResult r = run_process(spec);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  int expected = p.every_role ? 1 + servers + workers : workers * p.per_worker;
  EXPECT_EQ(count_of(r.output, p.success), expected) << r.output;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PsLiteJob,
    ::testing::Combine(::testing::Range(0, 4), ::testing::Values(1, 2, 4), ::testing::Values(1, 3)),
    [](const ::testing::TestParamInfo<Param>& param_info) {
      return std::string(kPrograms[std::get<0>(param_info.param)].name) + "_" +
             std::to_string(std::get<1>(param_info.param)) + "w" +
             std::to_string(std::get<2>(param_info.param)) + "s";
    });

}  // namespace
}  // namespace caravan::test
