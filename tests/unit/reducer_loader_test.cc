// The reducer loader: which 1.x tables and capabilities it accepts and what
// it says when it refuses a reducer. Real plugins: reducer-cpu behind the tables of
// plugins/reducer_table.c, loaded with dlopen by the engine's own loader.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "caravan/plugin/reducer_v1.h"
#include "engine/base/error.h"
#include "engine/reducer/reducer.h"

namespace caravan {
namespace {

const std::string kTestPlugins = CARAVAN_TEST_PLUGIN_DIR;

std::string file_of(const std::string& name) {
  return kTestPlugins + "/libcaravan-reducer-" + name + ".so";
}

// The error open_reducer throws; fails the test when the reducer loads.
std::string refusal(const std::string& name) {
  try {
    open_reducer(name, kTestPlugins);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), CARAVAN_ERR_PLUGIN) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "reducer " << name << " loaded";
  return "";
}

void expect_sums(Reducer& r) {
  std::vector<float> dst{1, 2, 3};
  const std::vector<float> src{10, 20, 30};
  r.sum(dst.data(), src.data(), dst.size(), CARAVAN_FLOAT32);
  EXPECT_EQ(dst, (std::vector<float>{11, 22, 33}));
  std::vector<int32_t> a{1, 2};
  const std::vector<int32_t> b{3, 4}, c{5, -6};
  const void* srcs[] = {a.data(), b.data(), c.data()};
  r.sum_many(a.data(), srcs, 3, a.size(), CARAVAN_INT32);
  EXPECT_EQ(a, (std::vector<int32_t>{9, 0}));
}

TEST(ReducerAbi, TableOfVersion10LoadsAndSums) {
  auto r = open_reducer("v10", kTestPlugins);
  EXPECT_EQ(r->description().rfind("v10 (", 0), 0u) << r->description();
  expect_sums(*r);
}

TEST(ReducerAbi, TableThatEndsAtTheLastEntryUsedLoadsAndSums) {
  // Past sum_many the table holds a pattern: a call from there would crash.
  auto r = open_reducer("endsatsummany", kTestPlugins);
  expect_sums(*r);
}

TEST(ReducerAbi, TooShortTableIsRefusedWithItsSizes) {
  std::string what = refusal("truncated");
  EXPECT_NE(what.find("reducer plugin 'truncated' (" + file_of("truncated") + ")"),
            std::string::npos)
      << what;
  const size_t has = offsetof(caravan_reducer_ops_v1, sum_many);
  const size_t needs = offsetof(caravan_reducer_ops_v1, scale);
  EXPECT_NE(what.find("ops table of " + std::to_string(has) + " bytes"), std::string::npos) << what;
  EXPECT_NE(what.find("init to sum_many, " + std::to_string(needs) + " bytes"), std::string::npos)
      << what;
  EXPECT_NE(what.find("a 1.0 table has " + std::to_string(CARAVAN_REDUCER_OPS_V1_0_SIZE)),
            std::string::npos)
      << what;
}

TEST(ReducerAbi, NullEntryTheEngineCallsIsRefused) {
  std::string what = refusal("nosummany");
  EXPECT_NE(what.find("reducer plugin 'nosummany' (" + file_of("nosummany") + ")"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("has no sum_many entry"), std::string::npos) << what;
}

TEST(ReducerAbi, ReducerThatCannotSumHostMemoryIsRefused) {
  // The engine hands reducers host memory only: a device reducer would be
  // given host pointers.
  std::string what = refusal("deviceonly");
  EXPECT_NE(what.find("reducer plugin 'deviceonly' (" + file_of("deviceonly") + ")"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("cannot sum host memory (its capabilities: device memory, async stream)"),
            std::string::npos)
      << what;
}

}  // namespace
}  // namespace caravan
