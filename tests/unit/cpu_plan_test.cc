// plan_worker_cpus on machines loaded into hwloc: synthetic ones for the
// CPU side, XML ones where GPUs (PCI devices) are needed, since synthetic
// topologies carry no I/O.
#include "engine/numa/cpu_plan.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "engine/base/error.h"
#include "engine/numa/topology.h"

namespace caravan {
namespace {

// 2 packages × 2 NUMA nodes × 8 cores × 2 threads: NUMA node n holds cores
// 8n..8n+7, and hwloc's synthetic numbering gives core k threads 2k, 2k+1.
const char* const kFourNodes = "pack:2 numa:2 core:8 pu:2";
const char* const kOneNode = "numa:1 core:4 pu:2";

CpuList range(unsigned first, unsigned last) {
  CpuList l;
  for (unsigned c = first; c <= last; ++c) l.push_back(c);
  return l;
}

CpuList join(CpuList a, const CpuList& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

CpuSettings local(int size, int rank = 0) {
  CpuSettings s;
  s.local_size = size;
  s.local_rank = rank;
  return s;
}

CpuPlan plan(const Topology& t, CpuSettings s, int rank) {
  s.local_rank = rank;
  return plan_worker_cpus(t.get(), s);
}

// The CPUs of every local rank.
std::vector<CpuList> plan_all(const Topology& t, const CpuSettings& s) {
  std::vector<CpuList> all;
  for (int r = 0; r < s.local_size; ++r) all.push_back(plan(t, s, r).cpus);
  return all;
}

// The CARAVAN_ERR_CONFIG message plan_worker_cpus throws; fails the test when none is thrown.
std::string plan_error(const Topology& t, const CpuSettings& s) {
  try {
    plan_worker_cpus(t.get(), s);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), CARAVAN_ERR_CONFIG);
    return e.what();
  }
  ADD_FAILURE() << "plan_worker_cpus accepted the settings";
  return "";
}

// Fails for each of `parts` the message lacks.
void expect_mentions(const std::string& message, std::initializer_list<std::string> parts) {
  for (const std::string& part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << "no '" << part << "' in: " << message;
}

void expect_disjoint(const std::vector<CpuList>& all) {
  std::set<unsigned> seen;
  for (size_t r = 0; r < all.size(); ++r) {
    EXPECT_FALSE(all[r].empty()) << "local rank " << r;
    for (unsigned c : all[r]) EXPECT_TRUE(seen.insert(c).second) << "CPU " << c << " given twice";
  }
}

TEST(CpuPlanTest, OneWorkerTakesTheCoresOfOneNumaNode) {
  Topology t = Topology::synthetic(kFourNodes);
  CpuPlan p = plan(t, local(1), 0);
  EXPECT_EQ(p.cpus, range(0, 15));
  EXPECT_EQ(p.cores, 8);
  EXPECT_EQ(p.numa_nodes, std::vector<unsigned>{0});
  EXPECT_EQ(p.how, "NUMA nodes by local rank");
}

TEST(CpuPlanTest, FourWorkersGetANumaNodeEach) {
  Topology t = Topology::synthetic(kFourNodes);
  std::vector<CpuList> all = plan_all(t, local(4));
  for (unsigned r = 0; r < 4; ++r) EXPECT_EQ(all[r], range(16 * r, 16 * r + 15)) << "rank " << r;
  EXPECT_EQ(plan(t, local(4), 2).numa_nodes, std::vector<unsigned>{2});
}

TEST(CpuPlanTest, EightWorkersShareNumaNodesTwoByTwo) {
  Topology t = Topology::synthetic(kFourNodes);
  std::vector<CpuList> all = plan_all(t, local(8));
  for (unsigned r = 0; r < 8; ++r) {
    EXPECT_EQ(all[r], range(8 * r, 8 * r + 7)) << "rank " << r;
    EXPECT_EQ(plan(t, local(8), static_cast<int>(r)).numa_nodes, std::vector<unsigned>{r / 2});
  }
}

TEST(CpuPlanTest, SingleThreadedUsesTheFirstThreadOfEachCore) {
  Topology t = Topology::synthetic(kFourNodes);
  CpuSettings s = local(4);
  s.multithreaded = false;
  CpuPlan p = plan(t, s, 1);
  EXPECT_EQ(p.cpus, (CpuList{16, 18, 20, 22, 24, 26, 28, 30}));
  EXPECT_EQ(p.cores, 8);
}

// Linux numbers the second thread of core i as i + (number of cores);
// the siblings must come from hwloc, not from arithmetic on the numbers.
TEST(CpuPlanTest, HyperthreadSiblingsComeFromTheTopology) {
  std::string indexes;
  for (unsigned core = 0; core < 32; ++core)
    indexes += (core ? "," : "") + std::to_string(core) + "," + std::to_string(core + 32);
  Topology t = Topology::synthetic("pack:2 numa:2 core:8 pu:2(indexes=" + indexes + ")");
  EXPECT_EQ(plan(t, local(4), 1).cpus, join(range(8, 15), range(40, 47)));
  CpuSettings single = local(4);
  single.multithreaded = false;
  EXPECT_EQ(plan(t, single, 1).cpus, range(8, 15));
}

TEST(CpuPlanTest, QuotaSetsCoresPerWorker) {
  Topology t = Topology::synthetic(kFourNodes);
  CpuSettings s = local(4);
  s.quota = 2;
  EXPECT_EQ(plan(t, s, 0).cpus, range(0, 3));
  EXPECT_EQ(plan(t, s, 3).cpus, range(48, 51));
  EXPECT_EQ(plan(t, s, 3).cores, 2);
}

// A quota larger than a NUMA node borrows from the nearest node: the other
// node of the same package, not one across the machine.
TEST(CpuPlanTest, QuotaBeyondANumaNodeBorrowsFromTheSamePackage) {
  Topology t = Topology::synthetic(kFourNodes);
  CpuSettings s = local(2);
  s.quota = 10;
  CpuPlan p0 = plan(t, s, 0);
  EXPECT_EQ(p0.cpus, range(0, 19));
  EXPECT_EQ(p0.numa_nodes, (std::vector<unsigned>{0, 1}));
  CpuPlan p1 = plan(t, s, 1);
  EXPECT_EQ(p1.cpus, range(32, 51));
  EXPECT_EQ(p1.numa_nodes, (std::vector<unsigned>{2, 3}));
}

TEST(CpuPlanTest, QuotaTooLargeForTheMachineNamesTheVariables) {
  Topology t = Topology::synthetic(kFourNodes);
  CpuSettings s = local(4);
  s.quota = 9;
  std::string e = plan_error(t, s);
  expect_mentions(
      e, {"BYTEPS_NUMA_DEFAULT_QUOTA=9", "BYTEPS_LOCAL_SIZE=4", "36 cores", "has 32 usable"});
}

TEST(CpuPlanTest, BlacklistedCpusAreNeverUsed) {
  Topology t = Topology::synthetic(kFourNodes);
  CpuSettings s = local(4);
  s.blacklist = range(0, 3);  // cores 0 and 1
  s.blacklist_text = "0-3";
  std::vector<CpuList> all = plan_all(t, s);
  expect_disjoint(all);
  // 30 usable cores: 7 each, but no more than the 6 node 0 still has.
  EXPECT_EQ(all[0], range(4, 15));
  EXPECT_EQ(all[1], range(16, 29));
  for (const CpuList& cpus : all)
    for (unsigned c : cpus) EXPECT_GT(c, 3u);
}

TEST(CpuPlanTest, BlacklistingOneThreadKeepsItsCore) {
  Topology t = Topology::synthetic(kFourNodes);
  CpuSettings s = local(1);
  s.blacklist = {0};
  s.blacklist_text = "0";
  CpuPlan p = plan(t, s, 0);
  EXPECT_EQ(p.cpus, range(1, 15));
  EXPECT_EQ(p.cores, 8);
  s.multithreaded = false;
  EXPECT_EQ(plan(t, s, 0).cpus, (CpuList{1, 2, 4, 6, 8, 10, 12, 14}));
}

TEST(CpuPlanTest, AbsentBlacklistedCpuIsOnlyNoted) {
  Topology t = Topology::synthetic(kOneNode);
  CpuSettings s = local(1);
  s.blacklist = {1, 99};
  s.blacklist_text = "1,99";
  CpuPlan p = plan(t, s, 0);
  EXPECT_EQ(p.cpus, (CpuList{0, 2, 3, 4, 5, 6, 7}));
  ASSERT_FALSE(p.notes.empty());
  EXPECT_NE(p.notes.back().find("CPU(s) 99"), std::string::npos) << p.notes.back();
}

TEST(CpuPlanTest, OneNumaNodeIsSplitBetweenWorkers) {
  Topology t = Topology::synthetic(kOneNode);
  EXPECT_EQ(plan(t, local(1), 0).cpus, range(0, 7));
  std::vector<CpuList> two = plan_all(t, local(2));
  EXPECT_EQ(two[0], range(0, 3));
  EXPECT_EQ(two[1], range(4, 7));
  std::vector<CpuList> three = plan_all(t, local(3));
  EXPECT_EQ(three, (std::vector<CpuList>{{0, 1}, {2, 3}, {4, 5}}));
  EXPECT_EQ(plan(t, local(3), 2).numa_nodes, std::vector<unsigned>{0});
}

// More local workers than cores, with nothing asked for explicitly: they
// run unbound and the plan says why; an explicit quota that cannot be met
// stays an error.
TEST(CpuPlanTest, MoreWorkersThanCoresRunUnbound) {
  Topology t = Topology::synthetic(kOneNode);
  CpuPlan p = plan_worker_cpus(t.get(), local(5, 0));
  EXPECT_TRUE(p.cpus.empty());
  expect_mentions(p.how, {"BYTEPS_LOCAL_SIZE=5", "has 4 usable"});
  CpuSettings s = local(2);
  s.blacklist = range(0, 5);
  s.blacklist_text = "0-5";
  p = plan_worker_cpus(t.get(), s);
  EXPECT_TRUE(p.cpus.empty());
  EXPECT_NE(p.how.find("outside BYTEPS_CPU_BLACKLIST='0-5'"), std::string::npos) << p.how;
  s = local(5, 0);
  s.quota = 1;
  expect_mentions(plan_error(t, s), {"BYTEPS_NUMA_DEFAULT_QUOTA=1", "BYTEPS_LOCAL_SIZE=5"});
}

TEST(CpuPlanTest, NoTwoWorkersShareACore) {
  Topology four = Topology::synthetic(kFourNodes);
  Topology one = Topology::synthetic(kOneNode);
  for (int size : {1, 2, 3, 5, 6, 7, 16, 32}) expect_disjoint(plan_all(four, local(size)));
  for (int size : {1, 2, 3, 4}) expect_disjoint(plan_all(one, local(size)));
  CpuSettings s = local(3);
  s.quota = 10;
  s.blacklist = {5, 17};
  s.blacklist_text = "5,17";
  expect_disjoint(plan_all(four, s));
}

CpuSettings visible(int size, std::vector<CpuList> sections, const std::string& text) {
  CpuSettings s = local(size);
  s.visible = std::move(sections);
  s.visible_text = text;
  return s;
}

TEST(CpuPlanTest, VisibleCoresAreTakenAsGiven) {
  Topology t = Topology::synthetic(kFourNodes);
  CpuSettings s = visible(2, {{1, 4, 5, 7, 8, 9, 10, 11}, range(16, 17)}, "1,4-5,7-11:16-17");
  CpuPlan p0 = plan(t, s, 0);
  EXPECT_EQ(p0.cpus, (CpuList{1, 4, 5, 7, 8, 9, 10, 11}));
  EXPECT_EQ(p0.cores, 5);  // cores 0, 2, 3, 4, 5
  EXPECT_EQ(p0.numa_nodes, std::vector<unsigned>{0});
  EXPECT_EQ(p0.how, "BYTEPS_VISIBLE_CPU_CORES");
  CpuPlan p1 = plan(t, s, 1);
  EXPECT_EQ(p1.cpus, range(16, 17));
  EXPECT_EQ(p1.numa_nodes, std::vector<unsigned>{1});
  s.blacklist = {4, 9};
  s.blacklist_text = "4,9";
  EXPECT_EQ(plan(t, s, 0).cpus, (CpuList{1, 5, 7, 8, 10, 11}));
}

TEST(CpuPlanTest, VisibleCoreThatDoesNotExistIsAnError) {
  Topology t = Topology::synthetic(kOneNode);
  // Only the section of local rank 1 is wrong; rank 0 must say so too.
  std::string e = plan_error(t, visible(2, {{0}, {7, 8}}, "0:7-8"));
  expect_mentions(e,
                  {"BYTEPS_VISIBLE_CPU_CORES='0:7-8'", "CPU 8", "local rank 1", "those are 0-7"});
}

TEST(CpuPlanTest, VisibleSectionEmptiedByTheBlacklistIsAnError) {
  Topology t = Topology::synthetic(kOneNode);
  CpuSettings s = visible(2, {{0, 1}, {2, 3}}, "0-1:2-3");
  s.blacklist = {2, 3};
  s.blacklist_text = "2,3";
  std::string e = plan_error(t, s);
  expect_mentions(e, {"BYTEPS_VISIBLE_CPU_CORES='0-1:2-3'", "local rank 1 (2-3) is empty",
                      "BYTEPS_CPU_BLACKLIST='2,3'"});
}

// ---- GPU locality, on XML machines: one NUMA node per package, `cores`
// single-thread cores each, and NVIDIA GPUs hung from a package (or from
// the machine itself, which is how hwloc shows a device of unknown
// locality).

struct Gpu {
  int package;  // -1: the machine
  unsigned bus;
};

std::string hex_mask(unsigned first, unsigned count) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", ((1u << count) - 1) << first);
  return buf;
}

std::string sets(const std::string& cpus, const std::string& nodes) {
  return " cpuset=\"" + cpus + "\" complete_cpuset=\"" + cpus + "\" nodeset=\"" + nodes +
         "\" complete_nodeset=\"" + nodes + "\"";
}

// hwloc's built-in XML reader (no libxml2) wants one tag per line, as
// hwloc itself writes them.
std::string gpu_xml(const Gpu& g) {
  char bus[8];
  std::snprintf(bus, sizeof bus, "%02x", g.bus);
  return "<object type=\"Bridge\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"0000:[" +
         std::string(bus) + "-" + bus + "]\">\n<object type=\"PCIDev\" pci_busid=\"0000:" + bus +
         ":00.0\" pci_type=\"0302 [10de:2335] [10de:18be] a1\"/>\n</object>\n";
}

std::string machine_xml(unsigned packages, unsigned cores, const std::vector<Gpu>& gpus) {
  std::string all_cpus = hex_mask(0, packages * cores), all_nodes = hex_mask(0, packages);
  std::string x =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
      "<topology version=\"2.0\">\n<object type=\"Machine\" os_index=\"0\"" +
      sets(all_cpus, all_nodes) + " allowed_cpuset=\"" + all_cpus + "\" allowed_nodeset=\"" +
      all_nodes + "\">\n";
  for (unsigned p = 0; p < packages; ++p) {
    std::string cpus = hex_mask(p * cores, cores), node = hex_mask(p, 1);
    std::string id = " os_index=\"" + std::to_string(p) + "\"";
    x += "<object type=\"Package\"" + id + sets(cpus, node) + ">\n";
    x += "<object type=\"NUMANode\"" + id + sets(cpus, node) + "/>\n";
    for (unsigned c = p * cores; c < (p + 1) * cores; ++c) {
      std::string one = sets(hex_mask(c, 1), node), cid = " os_index=\"" + std::to_string(c) + "\"";
      x += "<object type=\"Core\"" + cid + one + ">\n<object type=\"PU\"" + cid + one +
           "/>\n</object>\n";
    }
    for (const Gpu& g : gpus)
      if (g.package == static_cast<int>(p)) x += gpu_xml(g);
    x += "</object>\n";
  }
  for (const Gpu& g : gpus)
    if (g.package < 0) x += gpu_xml(g);
  return x + "</object>\n</topology>\n";
}

// GPU 0 (lowest bus) hangs from package 1 and GPU 1 from package 0: each
// worker goes to its GPU's node, against local-rank order.
TEST(CpuPlanTest, WorkersFollowTheirGpusNumaNode) {
  Topology t = Topology::xml(machine_xml(2, 2, {{0, 0x81}, {1, 0x01}}));
  CpuPlan p0 = plan(t, local(2), 0);
  EXPECT_EQ(p0.cpus, (CpuList{2, 3}));
  EXPECT_EQ(p0.numa_nodes, std::vector<unsigned>{1});
  EXPECT_EQ(p0.how, "nearest GPU 0000:01:00.0");
  CpuPlan p1 = plan(t, local(2), 1);
  EXPECT_EQ(p1.cpus, (CpuList{0, 1}));
  EXPECT_EQ(p1.how, "nearest GPU 0000:81:00.0");
  // Without GPUs the same machine is placed in local-rank order.
  Topology plain = Topology::xml(machine_xml(2, 2, {}));
  EXPECT_EQ(plan(plain, local(2), 0).cpus, (CpuList{0, 1}));
}

TEST(CpuPlanTest, CudaVisibleDevicesPicksEachRanksGpu) {
  Topology t = Topology::xml(machine_xml(2, 2, {{0, 0x81}, {1, 0x01}}));
  CpuSettings s = local(2);
  s.cuda_visible_devices = "1,0";
  EXPECT_EQ(plan(t, s, 0).cpus, (CpuList{0, 1}));
  EXPECT_EQ(plan(t, s, 1).cpus, (CpuList{2, 3}));
  s.cuda_visible_devices = "1";  // one GPU for two workers: rank order
  EXPECT_EQ(plan(t, s, 0).cpus, (CpuList{0, 1}));
  ASSERT_FALSE(plan(t, s, 0).notes.empty());
  EXPECT_NE(plan(t, s, 0).notes[0].find("fewer than BYTEPS_LOCAL_SIZE=2"), std::string::npos);
  s.cuda_visible_devices = "GPU-5d2a1c3e";
  CpuPlan by_uuid = plan(t, s, 0);
  EXPECT_EQ(by_uuid.cpus, (CpuList{0, 1}));
  ASSERT_FALSE(by_uuid.notes.empty());
  EXPECT_NE(by_uuid.notes[0].find("by UUID"), std::string::npos) << by_uuid.notes[0];
}

// Two GPUs on package 1 and one worker per GPU: the second finds node 1
// full and borrows from node 0. With four workers the GPUs no longer tell
// every rank's place, so all four fall back to local-rank order.
TEST(CpuPlanTest, WorkersOfOneGpuNodeOverflowToTheNearest) {
  Topology t = Topology::xml(machine_xml(2, 4, {{1, 0x01}, {1, 0x02}}));
  std::vector<CpuList> two = plan_all(t, local(2));
  EXPECT_EQ(two[0], (CpuList{4, 5, 6, 7}));
  EXPECT_EQ(two[1], (CpuList{0, 1, 2, 3}));
  std::vector<CpuList> four = plan_all(t, local(4));
  EXPECT_EQ(four, (std::vector<CpuList>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
}

TEST(CpuPlanTest, GpuOfUnknownLocalityFallsBackAndSaysWhy) {
  Topology t = Topology::xml(machine_xml(2, 2, {{-1, 0x01}, {-1, 0x02}}));
  CpuPlan p = plan(t, local(2), 0);
  EXPECT_EQ(p.cpus, (CpuList{0, 1}));
  EXPECT_EQ(p.how, "NUMA nodes by local rank");
  ASSERT_FALSE(p.notes.empty());
  EXPECT_NE(p.notes[0].find("PCI locality of GPU 0000:01:00.0"), std::string::npos) << p.notes[0];
}

}  // namespace
}  // namespace caravan
