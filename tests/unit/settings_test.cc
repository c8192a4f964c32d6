// The declared settings against the README's environment table and against
// the sources that read variables, and the warnings for unknown ones.
#include "engine/base/settings.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace caravan {
namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::set<std::string> declared() {
  std::set<std::string> names;
  for (const Setting& s : known_settings()) names.insert(s.name);
  return names;
}

bool plugin_parameter(const std::string& name) {
  return name.rfind("CARAVAN_VAN_", 0) == 0 || name.rfind("CARAVAN_REDUCER_", 0) == 0 ||
         name.rfind("CARAVAN_<", 0) == 0;
}

// Every `NAME` in the first column of the README's environment table.
TEST(Settings, ReadmeTableIsTheDeclaredSettings) {
  std::string readme = read_file(std::filesystem::path(CARAVAN_SOURCE_DIR) / "README.md");
  size_t start = readme.find("## Environment");
  ASSERT_NE(start, std::string::npos);
  std::set<std::string> documented;
  std::istringstream lines(readme.substr(start));
  std::string line;
  std::regex name("`([A-Z][A-Z0-9_<>]+)`");
  while (std::getline(lines, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    std::string first = line.substr(0, line.find('|', 1));
    for (std::sregex_iterator it(first.begin(), first.end(), name), end; it != end; ++it)
      if (!plugin_parameter((*it)[1])) documented.insert((*it)[1]);
  }
  std::set<std::string> names = declared();
  for (const std::string& n : names)
    EXPECT_TRUE(documented.count(n)) << n << " is declared (engine/base/settings.cc) but not in "
                                     << "the README's environment table";
  for (const std::string& n : documented)
    EXPECT_TRUE(names.count(n)) << n << " is in the README's environment table but not declared "
                                << "in engine/base/settings.cc";
}

// Every variable the engine, the tools and the Python layer read.
TEST(Settings, EveryVariableReadIsDeclared) {
  std::set<std::string> names = declared();
  std::regex read(
      R"re((?:env::\w+|getenv|environ\.get|environ\[)\(?\s*["']((?:DMLC|BYTEPS|PS|CARAVAN)_[A-Z0-9_]+)["'])re");
  size_t reads = 0;
  for (const char* dir : {"engine", "tools", "python/caravan"}) {
    for (const auto& f : std::filesystem::recursive_directory_iterator(
             std::filesystem::path(CARAVAN_SOURCE_DIR) / dir)) {
      std::string ext = f.path().extension();
      if (ext != ".cc" && ext != ".h" && ext != ".py") continue;
      std::string text = read_file(f.path());
      for (std::sregex_iterator it(text.begin(), text.end(), read), end; it != end; ++it) {
        ++reads;
        std::string n = (*it)[1];
        if (plugin_parameter(n)) continue;
        EXPECT_TRUE(names.count(n))
            << f.path() << " reads " << n << ", which engine/base/settings.cc does not declare";
      }
    }
  }
  EXPECT_GT(reads, 30u) << "the scan found too few reads to be looking at the sources";
}

TEST(Settings, UnknownVariablesAreNamedWithTheLikelyOne) {
  auto w = unknown_settings({"BYTEPS_PARTITON_BYTES=1024", "PATH=/bin", "DMLC_ROLE=worker",
                             "BYTEPS_NCCL_NUM_RINGS=1", "CARAVAN_VAN_ZMQ_WHATEVER=1",
                             "CARAVAN_NOT_A_THING_AT_ALL=1", "PS_VERBOS=2"});
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0],
            "BYTEPS_PARTITON_BYTES is set but Caravan reads no such variable; did you mean "
            "BYTEPS_PARTITION_BYTES?");
  EXPECT_NE(w[1].find("BYTEPS_NCCL_NUM_RINGS is set but Caravan does not implement it"),
            std::string::npos)
      << w[1];
  EXPECT_NE(w[2].find("CARAVAN_NOT_A_THING_AT_ALL is set but Caravan reads no such variable ("),
            std::string::npos)
      << w[2];
  EXPECT_EQ(w[3], "PS_VERBOS is set but Caravan reads no such variable; did you mean PS_VERBOSE?");
  EXPECT_TRUE(unknown_settings({"DMLC_NUM_WORKER=2", "HOME=/root"}).empty());
}

TEST(Settings, NearestNameNeedsACloseMatch) {
  std::vector<std::string> names = {"BYTEPS_LOCAL_RANK", "BYTEPS_LOCAL_SIZE"};
  EXPECT_EQ(nearest_name("BYTEPS_LOCAL_SIZ", names), "BYTEPS_LOCAL_SIZE");
  EXPECT_EQ(nearest_name("BYTEPS_LOCALRANK", names), "BYTEPS_LOCAL_RANK");
  EXPECT_EQ(nearest_name("BYTEPS_SOMETHING_ELSE", names), "");
}

}  // namespace
}  // namespace caravan
