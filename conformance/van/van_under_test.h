// What caravan-van-check was asked to check, set once by main() before
// any test runs: the van, and the programs for the whole-job test.
#pragma once

#include <string>

#include "kit/van_plugin.h"

namespace caravan::van_check {

const VanPlugin& van();
void set_van(VanPlugin plugin);

// Programs for the whole-job test; empty when not given.
struct JobPrograms {
  std::string launcher;
  std::string worker;
};
const JobPrograms& job_programs();
void set_job_programs(JobPrograms programs);

// The van's set_error text when init() says UNAVAILABLE (its hardware is
// missing here), else "".
std::string unavailable_reason();

}  // namespace caravan::van_check
