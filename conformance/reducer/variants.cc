#include "variants.h"

#include "reducer_plugins.h"  // generated: CARAVAN_CONFORMANCE_PLUGIN_PATHS

namespace caravan::conformance {

std::vector<Variant> all_variants() {
  static const char* const kPaths[] = {CARAVAN_CONFORMANCE_PLUGIN_PATHS nullptr};
  std::vector<Variant> out;
  for (const char* const* p = kPaths; *p; ++p) {
    std::string path = *p;
    std::string file = path.substr(path.find_last_of('/') + 1);
    const std::string prefix = "libcaravan-reducer-";
    std::string name = file.substr(prefix.size(), file.find('.') - prefix.size());
    if (name == "cpu") {
      for (const char* kernel : {"auto", "avx2", "portable", "avx512"})
        out.push_back({path, name, name + "_" + kernel, {{"KERNEL", kernel}}});
    } else {
      out.push_back({path, name, name, {}});
    }
  }
  return out;
}

}  // namespace caravan::conformance
