// What negotiating costs each rank as a job grows across namespace hosts
// over SSH: frames and sockets per rank, against the doubling's share.
#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <set>

#include "tests/util/ssh_host.h"

namespace hvd::testing {
namespace {

constexpr std::chrono::milliseconds kTimeout = std::chrono::seconds(90);

// Four namespace hosts that all accept the first's user key.
class FourSshHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    net_ = std::make_unique<TestNetwork>(4);
    if (!net_->ok()) {
      GTEST_SKIP() << "no network namespaces here: " << net_->error();
    }
    for (int i = 0; i < 4; ++i) {
      hosts_.push_back(std::make_unique<SshHost>(
          dir_, "h" + std::to_string(i), net_->address(i), net_->ns(i)));
      ASSERT_TRUE(hosts_.back()->ok()) << hosts_.back()->error();
      if (i > 0) hosts_.back()->AcceptKeyOf(*hosts_[0]);
    }
  }

  TempDir dir_, home_;
  std::unique_ptr<TestNetwork> net_;
  std::vector<std::unique_ptr<SshHost>> hosts_;
};

// One rank's share of a doubling among `n` ranks per cycle: the frames it
// sends (one per round, log2 of the largest power of two q <= n; two more
// for a rank that an extra rank past q folds into, one in all for that
// extra rank) and its peers (two sockets each).
struct DoublingShare {
  int sends, peers;
};
DoublingShare ShareOf(int rank, int n) {
  int q = 1, log2q = 0;
  while (q * 2 <= n) q *= 2, ++log2q;
  if (rank >= q) return {1, 1};
  const int folds = rank + q < n ? 1 : 0;
  return {log2q + 2 * folds, log2q + folds};
}

// What negotiating costs each rank as the job grows, on namespace hosts:
// by default (flat) each rank's share of the doubling among all ranks;
// with HOROVOD_CONTROL_HOST_LEADERS=1 only a host's leader (local rank 0)
// sends, its share of the leaders' doubling, and holds a bell socket from
// each other rank of its host; the others send nothing and hold one
// socket (their leader's bell). Hosts of one rank are the doubling among
// all ranks either way.
// The full mesh of old took N - 1 frames and sockets a rank. Each rank's
// context that negotiated says so when it ends (debug log).
TEST_F(FourSshHostsTest, NegotiationPerRankGrowsWithTheLogOfTheHosts) {
  struct Case {
    int hosts, per_host;
    std::vector<std::string> worker;
    bool flat = true;
  };
  // Three hosts fold one leader into the doubling of two; their every
  // collective is checked exactly.
  for (const Case& c :
       {Case{2, 1, {HVD_HELLO}, false},
        Case{3, 2, {HVD_TEST_WORKER, "--exact"}, false},
        Case{4, 8, {HVD_HELLO}, false}, Case{3, 2, {HVD_HELLO}}}) {
    const int n = c.hosts * c.per_host;
    SCOPED_TRACE(std::to_string(n) + " ranks" + (c.flat ? ", flat" : ""));
    std::string spec;
    for (int i = 0; i < c.hosts; ++i) {
      spec +=
          (i ? "," : "") + net_->address(i) + ":" + std::to_string(c.per_host);
    }
    std::vector<std::string> args = {
        "-i", hosts_[0]->user_key(), "-np",  std::to_string(n), "-H",
        spec, "--log-level",         "DEBUG"};
    args.insert(args.end(), c.worker.begin(), c.worker.end());
    std::vector<std::string> env = {"HOME=" + home_.path()};
    if (!c.flat) env.push_back("HOROVOD_CONTROL_HOST_LEADERS=1");
    std::vector<std::string> argv = {HVD_HOROVODRUN};
    argv.insert(argv.end(), args.begin(), args.end());
    Result r = RunCommand(argv, kTimeout, env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::regex said(
        R"(\[(\d+)\]<stderr>:.*control plane: (\d+) exchanges, (\d+) frames, \d+ bytes sent, (\d+) sockets)");
    std::set<int> ranks;
    for (const std::string& l : Lines(r.err)) {
      std::smatch m;
      if (!std::regex_search(l, m, said)) continue;
      const int rank = std::stoi(m[1]);
      const long exchanges = std::stol(m[2]), frames = std::stol(m[3]);
      const int sockets = std::stoi(m[4]);
      if (c.flat || c.per_host == 1) {
        const DoublingShare d = ShareOf(rank, n);
        EXPECT_EQ(frames, exchanges * d.sends) << l;
        EXPECT_EQ(sockets, 2 * d.peers) << l;
      } else if (rank % c.per_host == 0) {
        // The leaders' plane made one exchange of its own at the start
        // (where every host's ranks are).
        const DoublingShare d = ShareOf(rank / c.per_host, c.hosts);
        EXPECT_EQ(frames, (exchanges + 1) * d.sends) << l;
        EXPECT_EQ(sockets, 2 * d.peers + c.per_host - 1) << l;
      } else {
        EXPECT_EQ(frames, 0) << l;
        EXPECT_EQ(sockets, 1) << l;
      }
      ranks.insert(rank);
    }
    EXPECT_EQ(ranks.size(), static_cast<size_t>(n)) << r.err;
  }
}

}  // namespace
}  // namespace hvd::testing
