// CpuSettings::from_env and the CPU list syntax: what they accept, and how
// they name what they refuse.
#include "engine/numa/cpu_settings.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/base/error.h"
#include "tests/unit/env_guard.h"

namespace caravan {
namespace {

const char* const kVariables[] = {"BYTEPS_NUMA_ON",           "BYTEPS_NUMA_DEFAULT_QUOTA",
                                  "BYTEPS_CPU_BLACKLIST",     "BYTEPS_VISIBLE_CPU_CORES",
                                  "BYTEPS_MULTITHREADED_CPU", "BYTEPS_LOCAL_RANK",
                                  "BYTEPS_LOCAL_SIZE",        "CUDA_VISIBLE_DEVICES"};

class CpuSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVariables) env_.unset(v);
  }

  // The config error from_env throws; fails the test when none is thrown.
  std::string failure() {
    try {
      CpuSettings::from_env();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), CARAVAN_ERR_CONFIG);
      return e.what();
    }
    ADD_FAILURE() << "from_env accepted the environment";
    return "";
  }

  test::EnvGuard env_;
};

TEST_F(CpuSettingsTest, DefaultsAreBytePSDefaults) {
  CpuSettings s = CpuSettings::from_env();
  EXPECT_TRUE(s.numa_on);
  EXPECT_TRUE(s.multithreaded);
  EXPECT_FALSE(s.quota);
  EXPECT_TRUE(s.blacklist.empty());
  EXPECT_FALSE(s.visible);
  EXPECT_EQ(s.local_rank, 0);
  EXPECT_EQ(s.local_size, 1);
  EXPECT_FALSE(s.cuda_visible_devices);
}

TEST_F(CpuSettingsTest, ReadsEveryVariable) {
  env_.set("BYTEPS_NUMA_ON", "0")
      .set("BYTEPS_MULTITHREADED_CPU", "false")
      .set("BYTEPS_NUMA_DEFAULT_QUOTA", "6")
      .set("BYTEPS_CPU_BLACKLIST", "0, 3-4,2")
      .set("BYTEPS_VISIBLE_CPU_CORES", "1,4-5,7-11:12")
      .set("BYTEPS_LOCAL_SIZE", "2")
      .set("BYTEPS_LOCAL_RANK", "1")
      .set("CUDA_VISIBLE_DEVICES", "3,2");
  CpuSettings s = CpuSettings::from_env();
  EXPECT_FALSE(s.numa_on);
  EXPECT_FALSE(s.multithreaded);
  EXPECT_EQ(s.quota, 6);
  EXPECT_EQ(s.blacklist, (CpuList{0, 2, 3, 4}));
  EXPECT_EQ(s.blacklist_text, "0, 3-4,2");
  ASSERT_TRUE(s.visible);
  EXPECT_EQ(*s.visible, (std::vector<CpuList>{{1, 4, 5, 7, 8, 9, 10, 11}, {12}}));
  EXPECT_EQ(s.local_rank, 1);
  EXPECT_EQ(s.local_size, 2);
  EXPECT_EQ(s.cuda_visible_devices, "3,2");
}

TEST_F(CpuSettingsTest, EmptyCudaVisibleDevicesMeansNoGpu) {
  env_.set("CUDA_VISIBLE_DEVICES", "");
  EXPECT_EQ(CpuSettings::from_env().cuda_visible_devices, "");
}

TEST_F(CpuSettingsTest, GarbageVisibleCoresNamesVariableAndValue) {
  env_.set("BYTEPS_VISIBLE_CPU_CORES", "0-3:four");
  std::string e = failure();
  EXPECT_NE(e.find("BYTEPS_VISIBLE_CPU_CORES='0-3:four'"), std::string::npos) << e;
  EXPECT_NE(e.find("'four' is not a CPU number or a range"), std::string::npos) << e;
}

TEST_F(CpuSettingsTest, MalformedListsAreRefused) {
  struct Case {
    const char* value;
    const char* says;
  };
  for (const Case& c :
       {Case{"1,,2", "empty item"}, Case{"", "empty item"}, Case{"7-3", "runs backwards"},
        Case{"-1", "not a CPU number"}, Case{"1-", "not a CPU number"},
        Case{"0x3", "not a CPU number"}, Case{"0-70000", "beyond the largest CPU number"}}) {
    std::string e;
    try {
      parse_cpu_list("BYTEPS_CPU_BLACKLIST", c.value, c.value);
      ADD_FAILURE() << "accepted '" << c.value << "'";
    } catch (const Error& err) {
      e = err.what();
    }
    EXPECT_NE(e.find(std::string("BYTEPS_CPU_BLACKLIST='") + c.value + "'"), std::string::npos)
        << e;
    EXPECT_NE(e.find(c.says), std::string::npos) << e;
  }
}

TEST_F(CpuSettingsTest, EmptyVisibleSectionIsRefused) {
  env_.set("BYTEPS_LOCAL_SIZE", "2").set("BYTEPS_VISIBLE_CPU_CORES", "0-3::8");
  std::string e = failure();
  EXPECT_NE(e.find("BYTEPS_VISIBLE_CPU_CORES='0-3::8'"), std::string::npos) << e;
  EXPECT_NE(e.find("empty item"), std::string::npos) << e;
}

TEST_F(CpuSettingsTest, TooFewVisibleSectionsForTheLocalWorkers) {
  env_.set("BYTEPS_LOCAL_SIZE", "3").set("BYTEPS_VISIBLE_CPU_CORES", "0-3:4-7");
  std::string e = failure();
  EXPECT_NE(e.find("BYTEPS_VISIBLE_CPU_CORES='0-3:4-7' has 2 section(s)"), std::string::npos) << e;
  EXPECT_NE(e.find("BYTEPS_LOCAL_SIZE=3"), std::string::npos) << e;
}

TEST_F(CpuSettingsTest, NumbersAreChecked) {
  env_.set("BYTEPS_NUMA_DEFAULT_QUOTA", "0");
  EXPECT_NE(failure().find("BYTEPS_NUMA_DEFAULT_QUOTA='0'"), std::string::npos);
  env_.unset("BYTEPS_NUMA_DEFAULT_QUOTA")
      .set("BYTEPS_LOCAL_SIZE", "2")
      .set("BYTEPS_LOCAL_RANK", "2");
  EXPECT_NE(failure().find("BYTEPS_LOCAL_RANK='2' is out of range (expected 0..1)"),
            std::string::npos);
  env_.unset("BYTEPS_LOCAL_RANK").set("BYTEPS_NUMA_ON", "yes");
  EXPECT_NE(failure().find("BYTEPS_NUMA_ON='yes'"), std::string::npos);
  env_.unset("BYTEPS_NUMA_ON").set("BYTEPS_MULTITHREADED_CPU", "2");
  EXPECT_NE(failure().find("BYTEPS_MULTITHREADED_CPU='2'"), std::string::npos);
}

TEST(CpuListTest, FormatsRanges) {
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({5}), "5");
  EXPECT_EQ(format_cpu_list({}), "");
}

}  // namespace
}  // namespace caravan
