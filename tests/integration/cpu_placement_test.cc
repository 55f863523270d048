// Where horovodrun's workers run: each local rank on its share of the
// CPUs as mpirun binds, and Horovod's --thread-affinity for the engine
// threads.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/util/job_output.h"
#include "tests/util/subprocess.h"

namespace hvd::testing {
namespace {

constexpr std::chrono::milliseconds kTimeout = std::chrono::seconds(60);

// "0-3,8" (the kernel's list form) as a set.
std::set<int> CpuSet(const std::string& list) {
  std::set<int> out;
  std::stringstream in(list);
  std::string part;
  while (std::getline(in, part, ',')) {
    size_t dash = part.find('-');
    int lo = std::stoi(part.substr(0, dash));
    int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
    for (int c = lo; c <= hi; ++c) out.insert(c);
  }
  return out;
}

std::set<int> OwnCpus() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) == 0) {
      return CpuSet(line.substr(line.find_first_not_of(" \t", 18)));
    }
  }
  return {};
}

// rank -> {process CPUs, engine thread CPUs}, from test_worker --print-cpus.
std::map<int, std::pair<std::set<int>, std::set<int>>> RanksCpus(
    const std::vector<std::string>& extra_flags,
    const std::vector<std::string>& env = {}) {
  std::vector<std::string> cmd = {HVD_HOROVODRUN, "-np", "2"};
  cmd.insert(cmd.end(), extra_flags.begin(), extra_flags.end());
  cmd.insert(cmd.end(), {HVD_TEST_WORKER, "--print-cpus"});
  Result r = RunCommand(cmd, kTimeout, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<int, std::pair<std::set<int>, std::set<int>>> out;
  const std::regex line(R"(\[\d+\]<stdout>:CPUS (\d+) (\S+) (\S+))");
  for (const std::string& l : Lines(r.out)) {
    std::smatch m;
    if (std::regex_match(l, m, line)) {
      out[std::stoi(m[1])] = {CpuSet(m[2]), CpuSet(m[3])};
    }
  }
  EXPECT_EQ(out.size(), 2u) << r.out << r.err;
  return out;
}

// As mpirun binds ranks by default: each local rank on its own share of
// the CPUs, engine thread included, where the data goes through shared
// memory; --bind-to none leaves them all, and so does the TCP data path
// unless --bind-to core asks.
TEST(HorovodrunTest, LocalRanksKeepToTheirShareOfTheCpus) {
  const std::set<int> all = OwnCpus();
  if (all.size() < 2) GTEST_SKIP() << "one CPU: nothing to share out";
  auto bound = RanksCpus({});
  ASSERT_EQ(bound.size(), 2u);
  std::set<int> both;
  for (const auto& [rank, cpus] : bound) {
    EXPECT_FALSE(cpus.first.empty()) << rank;
    EXPECT_EQ(cpus.second, cpus.first) << "rank " << rank << "'s engine";
    for (int c : cpus.first) {
      EXPECT_TRUE(all.count(c)) << c;
      EXPECT_TRUE(both.insert(c).second) << "CPU " << c << " given twice";
    }
  }
  EXPECT_EQ(both, all);
  for (auto [flags, env] :
       {std::pair<std::vector<std::string>, std::vector<std::string>>{
            {"--bind-to", "none"}, {}},
        {{}, {"HOROVOD_SHM_DISABLE=1"}}}) {
    auto free = RanksCpus(flags, env);
    for (const auto& [rank, cpus] : free) {
      EXPECT_EQ(cpus.first, all) << rank;
      EXPECT_EQ(cpus.second, all) << rank;
    }
  }
  auto forced = RanksCpus({"--bind-to", "core"}, {"HOROVOD_SHM_DISABLE=1"});
  ASSERT_EQ(forced.size(), 2u);
  EXPECT_NE(forced[0].first, all);
  EXPECT_NE(forced[1].first, all);
}

// Horovod's --thread-affinity: the engine thread of local rank i on the
// i-th CPU listed; too short a list is a one-line error.
TEST(HorovodrunTest, ThreadAffinityPinsEachEngineThread) {
  const std::set<int> all = OwnCpus();
  if (all.size() < 2) GTEST_SKIP() << "one CPU: nothing to pin apart";
  const int a = *all.begin(), b = *std::next(all.begin());
  const std::string list = std::to_string(b) + "," + std::to_string(a);
  auto pinned = RanksCpus({"--thread-affinity", list});
  ASSERT_EQ(pinned.size(), 2u);
  EXPECT_EQ(pinned[0].second, std::set<int>{b});
  EXPECT_EQ(pinned[1].second, std::set<int>{a});
  Result r = RunCommand({HVD_HOROVODRUN, "-np", "2", "--thread-affinity",
                         std::to_string(a), HVD_TEST_WORKER},
                        kTimeout);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("HOROVOD_THREAD_AFFINITY"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("one CPU per local rank"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace hvd::testing
