// horovodrun --launcher-cmd: remote workers start through a command of the
// user's instead of SSH. Here the command is `ip netns exec {host}`, which
// reaches the test's network-namespace hosts the way `kubectl exec -i` or
// `docker exec -i` reach pods and containers.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <regex>
#include <set>

#include "tests/util/ssh_host.h"

namespace hvd::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kTimeout = seconds(120);

// The hosts are the namespaces' addresses (10.211.0.N+2); the command
// enters namespace hvdtN. (Its words: sh -c SCRIPT HOST WRAPPER...)
const char kViaNamespace[] =
    "sh -c 'h=${0##*.}; exec ip netns exec hvdt$((h - 2)) \"$@\"' {host}";

Result Horovodrun(std::vector<std::string> args) {
  std::vector<std::string> argv = {HVD_HOROVODRUN};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, kTimeout);
}

TEST(LauncherCmdTest, WorkersStartThroughTheCommand) {
  TestNetwork net(2);
  if (!net.ok()) GTEST_SKIP() << "no network namespaces here: " << net.error();
  Result r =
      Horovodrun({"--launcher-cmd", kViaNamespace, "-np", "4", "-H",
                  net.address(0) + ":2," + net.address(1) + ":2", HVD_HELLO});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<int> ranks;
  const std::regex line(R"(\[(\d+)\]<stdout>:rank (\d+)/4: sum=10)");
  for (const std::string& l : Lines(r.out)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, line)) << l;
    ranks.insert(std::stoi(m[1]));
  }
  EXPECT_EQ(ranks.size(), 4u) << r.out;
  // Each worker ran inside its host's namespace, where only that host's
  // address is.
  r = Horovodrun({"--launcher-cmd", kViaNamespace, "-np", "2", "-H",
                  net.address(0) + ":1," + net.address(1) + ":1", "/bin/sh",
                  "-c", "ip -4 -o addr show | grep -c " + net.address(0)});
  std::set<std::string> lines;
  for (const std::string& l : Lines(r.out)) lines.insert(l);
  EXPECT_EQ(lines, (std::set<std::string>{"[0]<stdout>:1", "[1]<stdout>:0"}))
      << r.out << r.err;
}

TEST(LauncherCmdTest, FailuresKeepTheirStatus) {
  TestNetwork net(1);
  if (!net.ok()) GTEST_SKIP() << "no network namespaces here: " << net.error();
  // A worker's own failure; the other, sleeping, is stopped.
  TempDir pids;
  Result r = Horovodrun({"--launcher-cmd", kViaNamespace, "-np", "2", "-H",
                         net.address(0) + ":2", HVD_TEST_WORKER, "--pid-dir",
                         pids.path(), "--fail-rank", "1", "--code", "5",
                         "--sleep", "60"});
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_NE(r.err.find("the first was rank 1 on host " + net.address(0)),
            std::string::npos)
      << r.err;
  EXPECT_LT(r.took, seconds(30));
  for (const char* rank : {"0", "1"}) {
    std::ifstream f(pids.path() + "/" + rank + ".pid");
    pid_t pid = 0;
    ASSERT_TRUE(f >> pid) << "rank " << rank << " wrote no pid";
    EXPECT_FALSE(ProcessAlive(pid)) << "rank " << rank << " outlived the job";
    if (ProcessAlive(pid)) kill(pid, SIGKILL);
  }
  // A command that cannot reach the host.
  r = Horovodrun({"--launcher-cmd", "ip netns exec no-such-{host}", "-np", "1",
                  "-H", net.address(0) + ":1", HVD_HELLO});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("rank 0 on host " + net.address(0)), std::string::npos)
      << r.err;
  // No address to give the workers: said before anything starts.
  r = Horovodrun({"--launcher-cmd", "ip netns exec {host}", "-np", "1", "-H",
                  net.ns(0) + ":1", HVD_HELLO});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot tell how host " + net.ns(0) +
                       " reaches this machine; give --network-interface"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace hvd::testing
