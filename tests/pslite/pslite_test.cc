// Runs the ps-lite programs in every role under caravan-launch --spmd, with
// 1 to 4 servers and workers.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

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
    {"DefaultHandle", PSLITE_KV_DEFAULT_HANDLE_BIN, "push, pull and push_pull sums exact", false, 1},
    {"CustomHandle", PSLITE_KV_CUSTOM_HANDLE_BIN, "lens, zero-copy calls, command and callbacks correct",
     false, 1},
    {"SimpleAppGroups", PSLITE_SIMPLE_APP_GROUPS_BIN,
     "SimpleApp requests to every group answered exactly once", true, 1},
    {"TwoCustomers", PSLITE_TWO_CUSTOMERS_BIN, "sums came back to the right customer", false, 2},
};

using Param = std::tuple<int, int, int>;  // program, workers, servers

class PsLiteJob : public ::testing::TestWithParam<Param> {};

void run_program(const Program& p, int workers, int servers,
                 std::vector<std::pair<std::string, std::string>> env) {
  ProcessSpec spec;
  spec.argv = {CARAVAN_LAUNCH_BIN, "--spmd",   "--workers", std::to_string(workers),
               "--servers",        std::to_string(servers), "--", p.path};
  spec.set_env = std::move(env);
  spec.timeout_s = 120;
  ProcessResult r = run_process(spec);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  int expected = p.every_role ? 1 + servers + workers : workers * p.per_worker;
  EXPECT_EQ(count_of(r.output, p.success), expected) << r.output;
}

TEST_P(PsLiteJob, RunsUnchangedInEveryRole) {
  run_program(kPrograms[std::get<0>(GetParam())], std::get<1>(GetParam()),
              std::get<2>(GetParam()), {});
}

// PS_RESEND as in ps-lite: with 5% of received messages dropped (requests,
// responses and acknowledgements alike), every program still completes.
TEST(PsLiteResend, EveryProgramSurvivesFivePercentDropped) {
  for (const Program& p : kPrograms) {
    SCOPED_TRACE(p.name);
    run_program(p, 2, 2, {{"PS_RESEND", "1"}, {"PS_RESEND_TIMEOUT", "100"}, {"PS_DROP_MSG", "5"}});
  }
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
