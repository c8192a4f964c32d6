#include "variants.h"

#include <map>

#include "compressor_plugins.h"  // generated: CARAVAN_COMPRESSOR_PLUGIN_PATHS

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

}  // namespace

std::vector<Variant> all_variants() {
  static const char* const kPaths[] = {CARAVAN_COMPRESSOR_PLUGIN_PATHS nullptr};
  const std::string prefix = "libcaravan-compressor-";
  std::vector<Variant> out;
  for (const char* const* p = kPaths; *p; ++p) {
    std::string path = *p;
    std::string file = path.substr(path.find_last_of('/') + 1);
    std::string name = file.substr(prefix.size(), file.find('.') - prefix.size());
    auto known = valid_params().find(name);
    out.push_back({path, name, known == valid_params().end() ? Params{} : known->second});
  }
  return out;
}

}  // namespace caravan::conformance
