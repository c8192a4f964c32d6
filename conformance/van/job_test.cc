// A whole job over the van under test: caravan-launch starts a scheduler,
// two servers and two workers that push_pull and check every sum.
#include <gtest/gtest.h>

#include "tests/support/process.h"
#include "van_under_test.h"

namespace caravan::van_check {
namespace {

TEST(Job, PushPullTwoWorkersTwoServers) {
  const JobPrograms& p = job_programs();
  if (p.launcher.empty() || p.worker.empty())
    GTEST_SKIP() << "no job programs: pass --launcher PATH/TO/caravan-launch and "
                    "--worker PATH/TO/sum_check_worker to run a whole job over this van";
  test::ProcessSpec spec;
  spec.argv = {p.launcher, "--workers", "2", "--servers", "2", "--", p.worker, "1", "100000"};
  spec.set_env = {{"CARAVAN_VAN", van().path},
                  {"DMLC_NODE_HOST", "127.0.0.1"},
                  {"CARAVAN_CONNECT_TIMEOUT", "30"},
                  {"CARAVAN_OP_TIMEOUT", "60"}};
  spec.unset_env = {"DMLC_ENABLE_RDMA"};
  spec.timeout_s = 120;
  test::ProcessResult r = test::run_process(spec);
  EXPECT_FALSE(r.timed_out) << "the job did not finish in " << spec.timeout_s << " s";
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::printf("job over %s: exit %d in %.1f s\n", van().descriptor->name, r.exit_code, r.seconds);
}

}  // namespace
}  // namespace caravan::van_check
