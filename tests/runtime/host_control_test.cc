// The control plane across hosts with one leader per host: the host
// messages and hand-outs (pure), and the plane itself with the ranks of
// several "hosts" as threads (each host a shared-memory group of its own,
// the leaders over TCP on 127.0.0.1).
#include "runtime/transport/hierarchical/host_control.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <functional>
#include <thread>

#include "runtime/transport/hierarchical/host_messages.h"
#include "tests/runtime/memory_store.h"

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;

// Merges messages "x..." as "x(low|high)": the result shows the order in
// which the operands met; anything else stays apart.
class ShowingMerger final : public ControlPlane::Merger {
 public:
  bool Merge(std::string_view low, std::string_view high,
             std::string* out) override {
    if (low.empty() || high.empty() || low[0] != 'x' || high[0] != 'x') {
      return false;
    }
    ++merges;
    *out = "x(" + std::string(low.substr(1)) + "|" +
           std::string(high.substr(1)) + ")";
    return true;
  }
  std::atomic<int> merges{0};
};

TEST(HostMessagesTest, AHostOfOneRankOrOfMergingRanksSendsOneMessage) {
  ShowingMerger merger;
  std::string out;
  PackHostMessage({"hello"}, nullptr, &out);
  EXPECT_EQ(out, "Mhello");
  PackHostMessage({"x1", "x2", "x3"}, &merger, &out);
  EXPECT_EQ(out, "Mx((1|2)|3)");
  // One that does not merge: the host lists them all.
  PackHostMessage({"x1", "y2", "x3"}, &merger, &out);
  EXPECT_EQ(out[0], 'L');
  PackHostMessage({"x1", "x2"}, nullptr, &out);
  EXPECT_EQ(out[0], 'L');

  HostMerger hosts(&merger);
  std::string merged;
  EXPECT_TRUE(hosts.Merge("Mx1", "Mx2", &merged));
  EXPECT_EQ(merged, "Mx(1|2)");
  EXPECT_FALSE(hosts.Merge("Mx1", "Ly", &merged));
  EXPECT_FALSE(hosts.Merge("Eboom", "Mx2", &merged));
}

// Three hosts: ranks {0, 1}, {2} and {3, 4, 5}.
const std::vector<std::vector<int>> kHosts = {{0, 1}, {2}, {3, 4, 5}};

std::string Hosts(const std::vector<std::vector<std::string>>& locals,
                  const std::vector<int>* groups,
                  const std::vector<std::string>* override_hosts = nullptr) {
  std::vector<std::string> hosts;
  for (const auto& l : locals) {
    hosts.emplace_back();
    PackHostMessage(l, nullptr, &hosts.back());
  }
  if (override_hosts) hosts = *override_hosts;
  std::string out;
  PackHandOut(hosts, groups, &out);
  return out;
}

TEST(HostMessagesTest, AHandOutGivesEveryRankItsMessage) {
  std::vector<std::string> all;
  std::vector<int> groups;
  bool merged = true;
  const std::string h = Hosts({{"a", "b"}, {"c"}, {"d", "e", "f"}}, nullptr);
  ASSERT_TRUE(UnpackHandOut(h, kHosts, &all, &groups, &merged).ok());
  EXPECT_FALSE(merged);
  EXPECT_EQ(all, (std::vector<std::string>{"a", "b", "c", "d", "e", "f"}));
  EXPECT_EQ(groups, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST(HostMessagesTest, MergedHostsAndLeadersGiveGroupsByTheirLowestRank) {
  std::vector<std::string> all;
  std::vector<int> groups;
  bool merged = false;
  // Host 0 merged within itself; hosts 1 and 2 merged by the leaders
  // (host 2's entry empty, its group host 1's).
  const std::vector<std::string> hosts = {"Mx01", "Mx2345", ""};
  const std::vector<int> cross = {0, 1, 1};
  ASSERT_TRUE(
      UnpackHandOut(Hosts({}, &cross, &hosts), kHosts, &all, &groups, &merged)
          .ok());
  EXPECT_TRUE(merged);
  EXPECT_EQ(groups, (std::vector<int>{0, 0, 2, 2, 2, 2}));
  EXPECT_EQ(all, (std::vector<std::string>{"x01", "", "x2345", "", "", ""}));
  // A group whose lowest rank lies in a later host (hosts numbered out of
  // rank order).
  const std::vector<std::vector<int>> odd = {{2, 3}, {0, 1}};
  const std::vector<std::string> two = {"Mxall", ""};
  const std::vector<int> one_group = {0, 0};
  ASSERT_TRUE(
      UnpackHandOut(Hosts({}, &one_group, &two), odd, &all, &groups, &merged)
          .ok());
  EXPECT_EQ(groups, (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(all[0], "xall");
  for (int r = 1; r < 4; ++r) EXPECT_EQ(all[r], "") << r;
}

TEST(HostMessagesTest, ErrorsAndBadBytesAreErrors) {
  std::vector<std::string> all;
  std::vector<int> groups;
  bool merged;
  Status s = UnpackHandOut(HandOutError("rank 7 closed its connection"), kHosts,
                           &all, &groups, &merged);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("rank 7 closed"), std::string::npos);
  const std::vector<std::string> hosts = {"Mx", HostErrorMessage("gone"), "Mz"};
  s = UnpackHandOut(Hosts({}, nullptr, &hosts), kHosts, &all, &groups, &merged);
  EXPECT_NE(s.message().find("the host of rank 2: gone"), std::string::npos)
      << s.ToString();
  const std::string good = Hosts({{"a", "b"}, {"c"}, {"d", "e", "f"}}, nullptr);
  for (size_t cut = 0; cut < good.size(); ++cut) {
    EXPECT_FALSE(
        UnpackHandOut(good.substr(0, cut), kHosts, &all, &groups, &merged).ok())
        << cut;
  }
}

// A job of hosts as threads: host h holds sizes[h] ranks, numbered in
// host order.
struct Job {
  std::vector<int> sizes;
  std::vector<int> host_of, local_of;
  std::string id;
  int size() const { return static_cast<int>(host_of.size()); }
};

Job MakeJob(std::vector<int> sizes) {
  static std::atomic<int> jobs{0};
  Job j;
  j.sizes = sizes;
  for (size_t h = 0; h < sizes.size(); ++h) {
    for (int l = 0; l < sizes[h]; ++l) {
      j.host_of.push_back(static_cast<int>(h));
      j.local_of.push_back(l);
    }
  }
  j.id = "hctl-" + std::to_string(::getpid()) + "-" + std::to_string(jobs++);
  return j;
}

HostControlOptions Options(const Job& j, int rank, milliseconds local_timeout) {
  HostControlOptions o;
  const int h = j.host_of[rank];
  o.local.rank = j.local_of[rank];
  o.local.size = j.sizes[h];
  o.local.group = "host" + std::to_string(h);
  o.local.job_id = j.id;
  o.local.slot_bytes = 16 << 10;
  o.local.op_timeout = local_timeout;
  o.job.rank = rank;
  o.job.size = j.size();
  o.job.connect_timeout = milliseconds(30000);
  o.job.op_timeout = milliseconds(20000);
  static_cast<TcpOptions&>(o.cross) = o.job;
  o.cross.rank = h;
  o.cross.size = static_cast<int>(j.sizes.size());
  return o;
}

std::vector<std::unique_ptr<ControlPlane>> Planes(
    const Job& j, MemoryStore& store,
    milliseconds local_timeout = milliseconds(40000)) {
  std::vector<std::unique_ptr<ControlPlane>> planes(j.size());
  std::vector<std::thread> threads;
  for (int r = 0; r < j.size(); ++r) {
    threads.emplace_back([&, r] {
      auto p = CreateHostControlPlane(Options(j, r, local_timeout), store);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      planes[r] = std::move(*p);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& p : planes) {
    if (!p) return {};
  }
  return planes;
}

// Runs `rounds` exchanges on every rank: rank r's message is
// message(r, round); `check` looks at what each rank got.
void ExchangeAll(
    std::vector<std::unique_ptr<ControlPlane>>& planes, int rounds,
    const std::function<std::string(int, int)>& message,
    const std::function<void(int, int, const std::vector<std::string>&)>&
        check) {
  std::vector<std::thread> threads;
  for (size_t r = 0; r < planes.size(); ++r) {
    threads.emplace_back([&, r] {
      for (int i = 0; i < rounds; ++i) {
        std::vector<std::string> all;
        Status s =
            planes[r]->Exchange(message(static_cast<int>(r), i), &all, true);
        ASSERT_TRUE(s.ok()) << s.ToString();
        check(static_cast<int>(r), i, all);
      }
    });
  }
  for (auto& t : threads) t.join();
}

TEST(HostControlTest, EveryRankGetsEveryRanksMessageOnHostsOfAnySize) {
  for (const std::vector<int>& sizes :
       std::vector<std::vector<int>>{{2, 2}, {2, 1, 3}, {1, 4}, {3, 3, 3}}) {
    SCOPED_TRACE("hosts of " + std::to_string(sizes.size()));
    const Job j = MakeJob(sizes);
    MemoryStore store;
    auto planes = Planes(j, store);
    ASSERT_EQ(planes.size(), static_cast<size_t>(j.size()));
    // Messages of every length, some past a shared-memory box (8 KiB) and
    // a slot (16 KiB).
    auto message = [](int r, int i) {
      const size_t len = static_cast<size_t>((r * 7 + i * 13) % 5) * 9000;
      return std::to_string(r) + ":" + std::string(len, char('a' + r % 26));
    };
    ExchangeAll(planes, 4, message,
                [&](int, int i, const std::vector<std::string>& all) {
                  ASSERT_EQ(all.size(), static_cast<size_t>(j.size()));
                  for (int q = 0; q < j.size(); ++q) {
                    ASSERT_EQ(all[q], message(q, i)) << "from rank " << q;
                  }
                });
    for (const auto& p : planes) EXPECT_EQ(p->MergedGroups(), nullptr);
  }
}

// Only leaders send over the network: a cycle costs a leader the
// leaders' doubling (log2 of the hosts) and the other ranks nothing, and
// each holds its bell sockets besides.
TEST(HostControlTest, OnlyLeadersSendAndTheirFramesGrowWithTheLogOfHosts) {
  for (int hosts : {2, 4, 8}) {
    SCOPED_TRACE(std::to_string(hosts) + " hosts of 2");
    const Job j = MakeJob(std::vector<int>(hosts, 2));
    MemoryStore store;
    auto planes = Planes(j, store);
    ASSERT_EQ(planes.size(), static_cast<size_t>(j.size()));
    std::vector<ControlPlane::Traffic> before;
    for (const auto& p : planes) before.push_back(p->traffic());
    const int rounds = 5;
    ExchangeAll(
        planes, rounds, [](int, int) { return std::string(9, '\x55'); },
        [](int, int, const std::vector<std::string>&) {});
    const int log2h = static_cast<int>(std::log2(hosts));
    for (int r = 0; r < j.size(); ++r) {
      const ControlPlane::Traffic t = planes[r]->traffic();
      const uint64_t frames = t.frames - before[r].frames;
      if (j.local_of[r] == 0) {
        EXPECT_EQ(frames, static_cast<uint64_t>(rounds * log2h)) << r;
        // The leaders' plane's 2 sockets per partner, and the bell of the
        // host's other rank.
        EXPECT_EQ(t.sockets, 2 * log2h + 1) << r;
      } else {
        EXPECT_EQ(frames, 0u) << r;
        EXPECT_EQ(t.bytes, 0u) << r;
        EXPECT_EQ(t.sockets, 1) << r;
      }
    }
  }
}

// Where every host holds one rank, the plane is the leaders' own: the
// same frames as the TCP plane's doubling.
TEST(HostControlTest, HostsOfOneRankTakeTheTcpPlaneItself) {
  const Job j = MakeJob({1, 1, 1, 1});
  MemoryStore store;
  auto planes = Planes(j, store);
  ASSERT_EQ(planes.size(), 4u);
  ExchangeAll(
      planes, 3, [](int r, int) { return std::to_string(r); },
      [](int, int, const std::vector<std::string>& all) {
        ASSERT_EQ(all, (std::vector<std::string>{"0", "1", "2", "3"}));
      });
  for (const auto& p : planes) EXPECT_EQ(p->traffic().sockets, 4);
}

// Messages that merge do so within hosts and among leaders; every rank
// sees the same merged message (the same order of operands) and groups.
TEST(HostControlTest, MergedMessagesAreTheSameOnEveryRank) {
  const Job j = MakeJob({2, 3, 1, 2});
  MemoryStore store;
  auto planes = Planes(j, store);
  ASSERT_EQ(planes.size(), static_cast<size_t>(j.size()));
  std::vector<std::unique_ptr<ShowingMerger>> mergers;
  for (auto& p : planes) {
    mergers.push_back(std::make_unique<ShowingMerger>());
    p->SetMerger(mergers.back().get());
  }
  std::vector<std::string> seen(j.size());
  std::vector<std::vector<int>> groups(j.size());
  ExchangeAll(
      planes, 1, [](int r, int) { return "x" + std::to_string(r); },
      [&](int r, int, const std::vector<std::string>& all) {
        const std::vector<int>* g = planes[r]->MergedGroups();
        ASSERT_NE(g, nullptr);
        groups[r] = *g;
        seen[r] = all[0];
        for (size_t q = 1; q < all.size(); ++q) EXPECT_EQ(all[q], "") << q;
      });
  for (int r = 0; r < j.size(); ++r) {
    EXPECT_EQ(groups[r], std::vector<int>(j.size(), 0)) << r;
    EXPECT_EQ(seen[r], seen[0]) << r;
  }
  // Every rank's operand once, in rank order.
  std::string digits;
  for (char c : seen[0]) {
    if (c >= '0' && c <= '9') digits += c;
  }
  EXPECT_EQ(digits, "01234567");
  // A cycle that does not merge on one host: its ranks' messages apart,
  // the other hosts' still merged.
  ExchangeAll(
      planes, 1,
      [](int r, int) { return (r == 3 ? "y" : "x") + std::to_string(r); },
      [&](int r, int, const std::vector<std::string>& all) {
        const std::vector<int>* g = planes[r]->MergedGroups();
        ASSERT_NE(g, nullptr);
        EXPECT_EQ((*g)[2], 2);
        EXPECT_EQ((*g)[3], 3);
        EXPECT_EQ((*g)[4], 4);
        EXPECT_EQ(all[3], "y3");
        EXPECT_EQ((*g)[1], 0);
        EXPECT_EQ((*g)[7], (*g)[5]);
      });
}

// A leader's engine thread sleeps on its sockets: a rank of its host that
// starts an exchange wakes it, and so does another host's leader.
TEST(HostControlTest, ALeadersWaitWakesForItsHostAndForOtherHosts) {
  const Job j = MakeJob({2, 2});
  MemoryStore store;
  auto planes = Planes(j, store);
  ASSERT_EQ(planes.size(), 4u);
  for (int starter : {1, 2, 3}) {
    SCOPED_TRACE("rank " + std::to_string(starter) + " starts");
    std::vector<std::thread> threads;
    std::atomic<int> woke{0};
    for (int r = 0; r < 4; ++r) {
      threads.emplace_back([&, r] {
        if (r != starter) {
          // Asleep until a peer's exchange (or far past any test timeout).
          bool peer = false;
          while (!peer) planes[r]->Wait(milliseconds(60000), &peer);
          woke++;
        }
        std::vector<std::string> all;
        Status s = planes[r]->Exchange("m" + std::to_string(r), &all, true);
        ASSERT_TRUE(s.ok()) << s.ToString();
        EXPECT_EQ(all[3], "m3");
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(woke, 3);
  }
}

// A rank that leaves is every rank's error. Ranks here are threads of one
// process, so shared memory cannot see one die (the launcher's fault
// tests kill processes): a rank of the host waits for a gone peer there
// until the local timeout, short here. Gone: a rank of a host (its leader
// times out on it and tells the other leaders, whose hosts name it), or a
// leader (the other leaders find its sockets closed at once; its host's
// rank times out).
TEST(HostControlTest, AGoneRankOrLeaderIsEveryRanksError) {
  for (int gone : {1, 2}) {
    SCOPED_TRACE("rank " + std::to_string(gone) + " leaves");
    const Job j = MakeJob({2, 2, 2});
    MemoryStore store;
    auto planes = Planes(j, store, milliseconds(2000));
    ASSERT_EQ(planes.size(), 6u);
    planes[gone].reset();
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    std::vector<Status> got(j.size());
    for (int r = 0; r < j.size(); ++r) {
      if (r == gone) continue;
      threads.emplace_back([&, r] {
        std::vector<std::string> all;
        got[r] = planes[r]->Exchange("m", &all, true);
        // The same again, at once.
        EXPECT_EQ(planes[r]->Exchange("m", &all, true).code(), got[r].code());
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < j.size(); ++r) {
      if (r == gone) continue;
      EXPECT_FALSE(got[r].ok()) << "rank " << r;
    }
    if (gone == 1) {
      // The other hosts' ranks learn it from rank 0's host.
      EXPECT_NE(got[4].message().find("the host of rank 0"), std::string::npos)
          << got[4].ToString();
    } else {
      EXPECT_NE(got[4].message().find("the leader of host 1 "),
                std::string::npos)
          << got[4].ToString();
    }
    // Well within the leaders' timeout (20 s).
    EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(15000));
  }
}

}  // namespace
}  // namespace hvd::runtime
