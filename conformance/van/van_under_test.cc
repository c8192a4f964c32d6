#include "van_under_test.h"

#include "kit/van_instance.h"

namespace caravan::van_check {

namespace {
VanPlugin g_van;
JobPrograms g_programs;
}  // namespace

const VanPlugin& van() { return g_van; }
void set_van(VanPlugin plugin) { g_van = std::move(plugin); }
const JobPrograms& job_programs() { return g_programs; }
void set_job_programs(JobPrograms programs) { g_programs = std::move(programs); }

std::string unavailable_reason() {
  VanInstance probe(van());
  if (probe.init_status() != CARAVAN_STATUS_UNAVAILABLE) return "";
  std::string why = probe.error();
  return why.empty() ? "init returned UNAVAILABLE" : why;
}

}  // namespace caravan::van_check
