// Horovod's elastic endings through horovodrun on this machine's loopback
// "hosts" (127.0.0.0/8 is local: no SSH), beside elastic_test.cc's
// namespace hosts: the job ends at once when every worker failed, and a
// host that joins after the workers' last commit does not fail a job that
// finished.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace hvd::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kTimeout = seconds(120);

class ElasticLocalTest : public ::testing::Test {
 protected:
  // The discovery script's answer from now on.
  void Discover(const std::string& hosts) {
    const std::string tmp = dir_.path() + "/hosts.tmp";
    std::ofstream(tmp) << hosts;
    std::filesystem::rename(tmp, dir_.path() + "/hosts");
  }

  std::vector<std::string> Args(std::vector<std::string> flags,
                                std::vector<std::string> worker) {
    std::vector<std::string> argv = {HVD_HOROVODRUN, "--host-discovery-script",
                                     "cat " + dir_.path() + "/hosts"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), worker.begin(), worker.end());
    return argv;
  }

  static int Finished(const std::string& out, int size) {
    const std::regex line(R"(\[\d+\]<stdout>:ELASTIC rank=\d+ size=)" +
                          std::to_string(size) + " .*");
    int n = 0;
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);) n += std::regex_match(l, line);
    return n;
  }

  TempDir dir_;
};

TEST_F(ElasticLocalTest, WhenEveryWorkerFailsTheJobEndsAtOnce) {
  Discover("127.0.0.1:1\n127.0.0.2:1\n");
  const auto began = std::chrono::steady_clock::now();
  Result r = Subprocess(Args({"-np", "2", "--min-np", "1", "--elastic-timeout",
                              "600", "--blacklist-cooldown-range", "1", "2"},
                             {HVD_TEST_WORKER, "--elastic-job", "100000",
                              "--step-ms", "20", "--fail-host", "all"}))
                 .Wait(kTimeout);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("no worker is left to go on from"), std::string::npos)
      << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - began, kTimeout);
}

TEST_F(ElasticLocalTest, AHostAddedAfterTheLastCommitDoesNotFailTheJob) {
  Discover("127.0.0.1:2\n");
  Subprocess job(
      Args({"-np", "2"}, {HVD_TEST_WORKER, "--elastic-job", "80", "--step-ms",
                          "50", "--commit-every", "100000"}));
  ASSERT_FALSE(job.WaitForStdout("(STEP step=10 size=2 )", seconds(60)).empty())
      << job.StderrSoFar();
  Discover("127.0.0.1:2\n127.0.0.2:1\n");
  ASSERT_FALSE(
      job.WaitForStderr("(elastic: 3 workers on)", seconds(60)).empty())
      << job.StderrSoFar();
  Result r = job.Wait(kTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("stopping the workers started for a reset that will "
                       "not come now: 127.0.0.2 (slot 0)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(Finished(r.out, 2), 2) << r.out;
}

}  // namespace
}  // namespace hvd::testing
