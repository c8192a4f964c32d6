// caravan-van-check: the van conformance kit. Runs one suite against the van
// given by --van, skipping (visibly) what the van says it does not offer.
// Any argument it does not know goes to GoogleTest (--gtest_filter=...).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "conformance/host/fake_host.h"
#include "kit/van_plugin.h"
#include "van_under_test.h"

namespace {

const char kUsage[] =
    "usage: caravan-van-check --van NAME|PATH [--param NAME=VALUE ...] [--launcher PATH --worker "
    "PATH] [gtest flags]\n"
    "  --van NAME       libcaravan-van-NAME.so from CARAVAN_PLUGIN_PATH, then "
    "<bindir>/../lib/caravan\n"
    "  --van PATH       a van plugin file, taken as is\n"
    "  --param N=V      the van's parameter N (as CARAVAN_VAN_<VAN>_N) for every instance\n"
    "  --launcher PATH  caravan-launch, for the whole-job test (skipped without it)\n"
    "  --worker PATH    sum_check_worker, for the whole-job test\n";

// Takes "--name value" or "--name=value" at argv[*i]; advances *i past it.
bool take_option(const char* name, int argc, char** argv, int* i, std::string* value) {
  size_t n = std::strlen(name);
  if (std::strncmp(argv[*i], name, n) != 0) return false;
  if (argv[*i][n] == '=') {
    *value = argv[*i] + n + 1;
    return true;
  }
  if (argv[*i][n] != '\0') return false;
  if (*i + 1 >= argc) {
    std::fprintf(stderr, "caravan-van-check: %s needs a value\n%s", name, kUsage);
    std::exit(2);
  }
  *value = argv[++*i];
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  namespace vc = caravan::van_check;
  std::string choice;
  vc::JobPrograms programs;
  bool help = false;
  caravan::conformance::Params params;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (take_option("--van", argc, argv, &i, &choice)) continue;
    std::string param;
    if (take_option("--param", argc, argv, &i, &param)) {
      if (caravan::conformance::add_param(param, &params)) continue;
      std::fprintf(stderr, "caravan-van-check: --param '%s' is not NAME=VALUE\n%s", param.c_str(),
                   kUsage);
      return 2;
    }
    if (take_option("--launcher", argc, argv, &i, &programs.launcher)) continue;
    if (take_option("--worker", argc, argv, &i, &programs.worker)) continue;
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(kUsage, stdout);
      help = true;
      rest.push_back(argv[i]);
      continue;
    }
    rest.push_back(argv[i]);
  }
  int gtest_argc = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  ::testing::InitGoogleTest(&gtest_argc, rest.data());
  if (choice.empty() && help) return 0;
  if (choice.empty()) {
    std::fprintf(stderr, "caravan-van-check: --van is required\n%s", kUsage);
    return 2;
  }
  vc::VanPlugin plugin;
  std::string why;
  if (!vc::open_van(choice, &plugin, &why)) {
    std::fprintf(stderr, "caravan-van-check: %s\n", why.c_str());
    return 2;
  }
  std::printf("caravan-van-check: van '%s' %s from %s\n", plugin.descriptor->name,
              plugin.descriptor->version ? plugin.descriptor->version : "?", plugin.path.c_str());
  plugin.params = std::move(params);
  vc::set_van(std::move(plugin));
  vc::set_job_programs(std::move(programs));
  // A van whose hardware is missing here (init says UNAVAILABLE) is checked
  // as far as loading goes; everything that needs an instance is reported
  // as skipped, with the van's reason, and the exit code is 77 (CTest's
  // SKIP_RETURN_CODE), never a pass.
  std::string unavailable = vc::unavailable_reason();
  if (!unavailable.empty()) {
    std::printf(
        "caravan-van-check: SKIPPED every test that needs an instance: van '%s' is "
        "unavailable on this machine: %s\n",
        vc::van().descriptor->name, unavailable.c_str());
    ::testing::GTEST_FLAG(filter) =
        "Loading.*-Loading.Properties:Loading.RepeatedInitFinalize:Loading.SeveralInstancesAtOnce";
    int rc = RUN_ALL_TESTS();
    return rc != 0 ? rc : 77;
  }
  return RUN_ALL_TESTS();
}
