// caravan-compressor-check: the compressor conformance suite, installed for
// whoever writes a compressor. Runs it on the plugin files given by
// --compressor, created with the tensor parameters given by --param (what
// the compressor needs to be valid, e.g. its k). Any argument it does not
// know goes to GoogleTest (--gtest_filter=...).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "variants.h"

namespace {

const char kUsage[] =
    "usage: caravan-compressor-check --compressor PATH [--compressor PATH...]\n"
    "                                [--param key=value...] [gtest flags]\n"
    "  --compressor PATH  a compressor plugin file (libcaravan-compressor-NAME.so)\n"
    "  --param key=value  a tensor parameter every state is created with\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> paths;
  caravan::conformance::Params params;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool takes_value = a == "--compressor" || a == "--param";
    if (takes_value && i + 1 >= argc) {
      std::fprintf(stderr, "caravan-compressor-check: %s needs a value\n%s", a.c_str(), kUsage);
      return 2;
    }
    if (a == "--compressor") {
      paths.push_back(argv[++i]);
    } else if (a == "--param") {
      std::string kv = argv[++i];
      if (!caravan::conformance::add_param(kv, &params)) {
        std::fprintf(stderr, "caravan-compressor-check: --param '%s' is not key=value\n%s",
                     kv.c_str(), kUsage);
        return 2;
      }
    } else if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (paths.empty()) {
    std::fprintf(stderr, "caravan-compressor-check: no --compressor given\n%s", kUsage);
    return 2;
  }
  caravan::conformance::test_only(paths, params);
  // GoogleTest moves the flags it takes out of argv, NULL at argv[argc] too.
  int n = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  testing::InitGoogleTest(&n, rest.data());
  return RUN_ALL_TESTS();
}
