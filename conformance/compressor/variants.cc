#include "variants.h"

#include <map>

#ifdef CARAVAN_COMPRESSOR_CHECK
#define CARAVAN_COMPRESSOR_PLUGIN_PATHS  // the installed kit knows no build tree
#else
#include "compressor_plugins.h"  // generated: CARAVAN_COMPRESSOR_PLUGIN_PATHS
#endif

namespace caravan::conformance {

namespace {

// The one table of parameters that make each built-in valid: top-k and
// random-k need k (here 5% of a partition), dithering its number of levels.
// A compressor not named here is created with none.
const std::map<std::string, Params>& valid_params() {
  static const std::map<std::string, Params> table = {
      {"onebit", {}},
      {"topk", {{"byteps_compressor_k", "0.05"}}},
      {"randomk", {{"byteps_compressor_k", "0.05"}}},
      {"dithering", {{"byteps_compressor_k", "4"}}},
  };
  return table;
}

std::vector<std::string>& given_paths() {
  static std::vector<std::string> paths;
  return paths;
}
Params& given_params() {
  static Params params;
  return params;
}

}  // namespace

void test_only(const std::vector<std::string>& paths, const Params& params) {
  given_paths() = paths;
  given_params() = params;
}

std::vector<Variant> all_variants() {
  static const char* const kPaths[] = {CARAVAN_COMPRESSOR_PLUGIN_PATHS nullptr};
  std::vector<std::string> paths = given_paths();
  if (paths.empty())
    for (const char* const* p = kPaths; *p; ++p) paths.push_back(*p);
  const std::string prefix = "libcaravan-compressor-";
  std::vector<Variant> out;
  for (const std::string& path : paths) {
    std::string file = path.substr(path.find_last_of('/') + 1);
    // A file named otherwise keeps its whole name; the descriptor test then
    // says the name does not match.
    std::string name = file.rfind(prefix, 0) == 0
                           ? file.substr(prefix.size(), file.find('.') - prefix.size())
                           : file;
    auto known = valid_params().find(name);
    Params params = known == valid_params().end() ? Params{} : known->second;
    for (const auto& [k, v] : given_params()) params[k] = v;
    out.push_back({path, name, params});
  }
  return out;
}

}  // namespace caravan::conformance
