// PluginVan, the engine's adapter of a van plugin's table, against test
// plugins that fail where a real one rarely does.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "engine/base/config.h"
#include "engine/base/error.h"
#include "engine/van/van.h"

namespace caravan {
namespace {

// init() succeeded, then properties() failed: the instance is finalized
// (the constructor threw, so no destructor would have).
TEST(PluginVan, AnInstanceWhosePropertiesFailIsFinalized) {
  // Held open here, so its counters outlive the engine's dlclose.
  void* lib = dlopen(CARAVAN_TEST_NO_PROPERTIES_VAN, RTLD_NOW);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto* inits = static_cast<int*>(dlsym(lib, "caravan_test_inits"));
  auto* finalizes = static_cast<int*>(dlsym(lib, "caravan_test_finalizes"));
  ASSERT_TRUE(inits && finalizes);
  JobConfig config;
  config.van = CARAVAN_TEST_NO_PROPERTIES_VAN;
  try {
    open_van(config);
    ADD_FAILURE() << "a van whose properties() fails was opened";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("properties"), std::string::npos) << e.what();
  }
  EXPECT_EQ(*inits, 1);
  EXPECT_EQ(*finalizes, 1);
  dlclose(lib);
}

}  // namespace
}  // namespace caravan
