// The control plane at scale: the doubling's plan, its frames, and what
// each rank sends and holds per exchange as the ranks grow.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <thread>

#include "runtime/transport/tcp/control_frame.h"
#include "runtime/transport/tcp/doubling.h"
#include "runtime/transport/tcp/tcp_control.h"
#include "tests/runtime/memory_store.h"
#include "tests/runtime/tcp_planes.h"

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;

TEST(DoublingTest, PlansAsATable) {
  struct Row {
    int rank, size;
    DoublingPlan plan;
  };
  const std::vector<Row> rows = {
      {0, 1, {-1, false, {}}},         {0, 2, {-1, false, {1}}},
      {1, 2, {-1, false, {0}}},        {0, 3, {2, false, {1}}},
      {1, 3, {-1, false, {0}}},        {2, 3, {0, true, {}}},
      {3, 8, {-1, false, {2, 1, 7}}},  {4, 5, {0, true, {}}},
      {1, 6, {5, false, {0, 3}}},      {5, 6, {1, true, {}}},
      {6, 12, {-1, false, {7, 4, 2}}}, {11, 12, {3, true, {}}},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(PlanDoubling(row.rank, row.size), row.plan)
        << "rank " << row.rank << " of " << row.size;
  }
}

// Following every rank's plan, knowledge spreads to everyone; peers are
// symmetric and few.
TEST(DoublingTest, EveryRankLearnsEveryPartFromFewSymmetricPeers) {
  for (int n = 1; n <= 40; ++n) {
    std::vector<DoublingPlan> plans;
    for (int r = 0; r < n; ++r) plans.push_back(PlanDoubling(r, n));
    std::vector<std::set<int>> know(n);
    for (int r = 0; r < n; ++r) know[r] = {r};
    for (int r = 0; r < n; ++r) {  // the extras fold in
      if (plans[r].extra) know[plans[r].fold].insert(r);
    }
    const size_t rounds = plans[0].partners.size();
    for (size_t k = 0; k < rounds; ++k) {
      auto before = know;
      for (int r = 0; r < n; ++r) {
        if (plans[r].extra) continue;
        const int p = plans[r].partners[k];
        ASSERT_EQ(plans[p].partners[k], r) << "n " << n << " round " << k;
        know[r].insert(before[p].begin(), before[p].end());
      }
    }
    for (int r = 0; r < n; ++r) {  // and get the whole back
      if (plans[r].extra) know[r] = know[plans[r].fold];
    }
    const int log2n = static_cast<int>(std::floor(std::log2(n)));
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(know[r].size(), static_cast<size_t>(n))
          << "rank " << r << " of " << n;
      const std::vector<int> peers = DoublingPeers(r, n);
      EXPECT_LE(peers.size(), static_cast<size_t>(log2n + 1));
      for (int p : peers) {
        const std::vector<int> back = DoublingPeers(p, n);
        EXPECT_NE(std::find(back.begin(), back.end(), r), back.end())
            << r << " and " << p << " of " << n;
      }
    }
  }
}

// What a rank knows: `all`'s messages where `known`, groups as given
// (each rank its own where empty).
Parts Know(const std::vector<std::string>& all, const std::vector<bool>& known,
           const std::vector<int>& groups = {}) {
  Parts p;
  p.Reset(static_cast<int>(all.size()));
  p.all = all;
  p.known = known;
  if (!groups.empty()) {
    p.group = groups;
    for (size_t r = 0; r < groups.size(); ++r) {
      if (groups[r] != static_cast<int>(r)) p.merged = true;
    }
  }
  return p;
}

std::string Frame(const Parts& p) {
  std::string f;
  PutPartsFrame(p, &f);
  return f;
}

// Reads frame `f` into what a rank of `n` that knew nothing knows.
bool Read(const std::string& f, size_t n, Parts* got) {
  got->Reset(static_cast<int>(n));
  return f.size() > kFrameHead &&
         f[4] == static_cast<char>(FrameKind::kParts) &&
         ReadPartsFrame(std::string_view(f).substr(kFrameHead), got);
}

TEST(ControlFrameTest, EqualMessagesTravelOnceAndComeBackWhole) {
  const std::string cached(24, 'c');
  const std::string alone = Frame(Know({cached}, {true}));
  for (size_t n : {size_t{2}, size_t{32}, size_t{4096}}) {
    std::vector<std::string> all(n, cached);
    const std::string f = Frame(Know(all, std::vector<bool>(n, true)));
    EXPECT_EQ(f.size(), alone.size()) << n << " equal messages";
    Parts got;
    ASSERT_TRUE(Read(f, n, &got));
    EXPECT_EQ(got.all, all);
    EXPECT_EQ(got.known, std::vector<bool>(n, true));
    EXPECT_FALSE(got.merged);
    EXPECT_EQ(got.learned.size(), n);
  }
  // Ranks apart, messages that differ, and some that repeat out of order.
  std::vector<std::string> all = {"a", "", "b", "a", "x", "b", "b", "zz"};
  const std::vector<bool> mask = {true, true, false, true,
                                  true, true, true,  false};
  Parts got;
  got.Reset(8);
  got.all.assign(8, "untouched");
  ASSERT_TRUE(ReadPartsFrame(
      std::string_view(Frame(Know(all, mask))).substr(kFrameHead), &got));
  EXPECT_EQ(got.known, mask);
  EXPECT_EQ(got.learned, (std::vector<int>{0, 1, 3, 4, 5, 6}));
  for (size_t r = 0; r < all.size(); ++r) {
    EXPECT_EQ(got.all[r], mask[r] ? all[r] : "untouched") << r;
  }
}

// Merged groups travel as one message each, their ranks' entries empty
// but the first's, each rank told its group; equal messages of ranks in
// no group are not taken for a group's.
TEST(ControlFrameTest, GroupsTravelWithTheirRanks) {
  // Groups {0, 4} (a fold) and {1, 2, 3}; 5, 6 and 7 alone, 5 and 6 with
  // the same bytes as group 0's message.
  const std::vector<std::string> all = {"g0", "g1", "",   "",
                                        "",   "g0", "g0", "z"};
  const std::vector<int> groups = {0, 1, 1, 1, 0, 5, 6, 7};
  const Parts p = Know(all, std::vector<bool>(8, true), groups);
  Parts got;
  ASSERT_TRUE(Read(Frame(p), 8, &got));
  EXPECT_TRUE(got.merged);
  EXPECT_EQ(got.group, groups);
  EXPECT_EQ(got.all, all);
  // Sent on, the same again.
  Parts again;
  ASSERT_TRUE(Read(Frame(got), 8, &again));
  EXPECT_EQ(again.group, groups);
  EXPECT_EQ(again.all, all);
}

TEST(ControlFrameTest, MalformedFramesAreRefused) {
  const std::string f = Frame(Know({"a", "b", "c"}, {true, true, true}));
  const std::string_view body = std::string_view(f).substr(kFrameHead);
  for (size_t cut = 0; cut < body.size(); ++cut) {
    Parts got;
    got.Reset(3);
    EXPECT_FALSE(ReadPartsFrame(body.substr(0, cut), &got)) << cut;
  }
  Parts two;  // naming a rank past the job's
  two.Reset(2);
  EXPECT_FALSE(ReadPartsFrame(body, &two));
  Parts three;  // trailing bytes
  three.Reset(3);
  EXPECT_FALSE(ReadPartsFrame(std::string(body) + "x", &three));
  // An entry's merged flag other than 0 or 1.
  std::string bad(body);
  bad[4] = 2;
  three.Reset(3);
  EXPECT_FALSE(ReadPartsFrame(bad, &three));
}

ControlOptions Options(int rank, int size, ControlExchange exchange) {
  ControlOptions o;
  o.rank = rank;
  o.size = size;
  o.exchange = exchange;
  o.connect_timeout = milliseconds(30000);
  o.op_timeout = milliseconds(30000);
  return o;
}

std::vector<std::unique_ptr<ControlPlane>> Planes(int size,
                                                  ControlExchange exchange,
                                                  MemoryStore& store) {
  return TcpPlanes(size, store,
                   [&](int r) { return Options(r, size, exchange); });
}

// Runs `rounds` exchanges on every rank; rank r's message is `message(r)`.
void ExchangeAll(std::vector<std::unique_ptr<ControlPlane>>& planes, int rounds,
                 const std::function<std::string(int)>& message) {
  const int n = static_cast<int>(planes.size());
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      for (int i = 0; i < rounds; ++i) {
        std::vector<std::string> all;
        Status s = planes[r]->Exchange(message(r), &all, true);
        ASSERT_TRUE(s.ok()) << s.ToString();
        ASSERT_EQ(all.size(), static_cast<size_t>(n));
        for (int q = 0; q < n; ++q) ASSERT_EQ(all[q], message(q));
      }
    });
  }
  for (auto& t : threads) t.join();
}

struct PerExchange {
  double frames = 0, bytes = 0;
  int sockets = 0;
};

// The most any rank sent per exchange, and held.
PerExchange Busiest(const std::vector<std::unique_ptr<ControlPlane>>& planes,
                    int rounds) {
  PerExchange most;
  for (const auto& p : planes) {
    const ControlPlane::Traffic t = p->traffic();
    most.frames = std::max(most.frames, double(t.frames) / rounds);
    most.bytes = std::max(most.bytes, double(t.bytes) / rounds);
    most.sockets = std::max(most.sockets, t.sockets);
  }
  return most;
}

// What a cycle of cached tensors costs each rank, N = 2..32: by doubling,
// frames and sockets grow with log2(N) and each frame's bytes not at all;
// over the mesh, frames and sockets grow with N.
TEST(ControlTrafficTest, PerRankCostGrowsWithTheLogOfTheRanks) {
  const std::string cached = std::string(1, '\0') + std::string(8, '\x55');
  const int rounds = 4;
  const std::string one_frame = Frame(Know({cached}, {true}));
  for (int n : {2, 3, 4, 8, 16, 32}) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    const int log2n = static_cast<int>(std::floor(std::log2(n)));
    const bool pow2 = (n & (n - 1)) == 0;
    MemoryStore store;
    auto planes = Planes(n, ControlExchange::kDoubling, store);
    ASSERT_EQ(planes.size(), static_cast<size_t>(n));
    ExchangeAll(planes, rounds, [&](int) { return cached; });
    const PerExchange d = Busiest(planes, rounds);
    // log2(n) rounds; a rank with an extra also tells it of the start and
    // answers it.
    EXPECT_EQ(d.frames, log2n + (pow2 ? 0 : 2));
    // One frame's worth each, whatever n: one message, one run of ranks
    // (two where the folded ranks leave a gap: 12 bytes more; a start
    // frame, or the first trip's own frame, is less).
    EXPECT_LE(d.bytes, d.frames * (one_frame.size() + (pow2 ? 0 : 12)));
    EXPECT_GE(d.bytes, d.frames * (kFrameHead + cached.size()));
    EXPECT_EQ(d.sockets, 2 * (log2n + (pow2 ? 0 : 1)));
    if (n <= 16) {
      MemoryStore mesh_store;
      auto mesh = Planes(n, ControlExchange::kMesh, mesh_store);
      ASSERT_EQ(mesh.size(), static_cast<size_t>(n));
      ExchangeAll(mesh, rounds, [&](int) { return cached; });
      const PerExchange m = Busiest(mesh, rounds);
      EXPECT_EQ(m.frames, n - 1);
      EXPECT_EQ(m.sockets, 2 * (n - 1));
      if (n >= 8) {
        EXPECT_LT(d.frames * 2, m.frames);
      }
    }
  }
}

// Messages that all differ (small tensors' data) still reach everyone,
// through every shape of doubling.
TEST(ControlTrafficTest, DifferentMessagesReachEveryRank) {
  for (int n : {3, 5, 6, 7, 9}) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    MemoryStore store;
    auto planes = Planes(n, ControlExchange::kDoubling, store);
    ASSERT_EQ(planes.size(), static_cast<size_t>(n));
    ExchangeAll(planes, 3, [](int r) {
      return std::string(static_cast<size_t>(r % 3) * 1000, char('a' + r));
    });
  }
}

// A rank that dies is every rank's error, promptly, named as its peers
// saw it (they tell theirs), though most ranks hold no socket to it.
TEST(ControlTrafficTest, ADeadRankIsEveryonesErrorThroughThePeers) {
  const int n = 8;
  MemoryStore store;
  auto planes = Planes(n, ControlExchange::kDoubling, store);
  ASSERT_EQ(planes.size(), static_cast<size_t>(n));
  planes[5].reset();
  const auto start = std::chrono::steady_clock::now();
  std::vector<Status> got(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    if (r == 5) continue;
    threads.emplace_back([&, r] {
      std::vector<std::string> all;
      got[r] = planes[r]->Exchange("m", &all, true);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    if (r == 5) continue;
    EXPECT_EQ(got[r].code(), StatusCode::kUnavailable) << got[r].ToString();
    EXPECT_NE(got[r].message().find("rank 5 closed its connection"),
              std::string::npos)
        << got[r].message();
  }
  // Well inside the 30 s a silent peer would take.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// Merges messages that start with "m" into "(low+high)": the result shows
// which operands met in which order.
class TreeMerger final : public ControlPlane::Merger {
 public:
  bool Merge(std::string_view low, std::string_view high,
             std::string* out) override {
    if (low.empty() || high.empty() || low[0] != 'm' || high[0] != 'm') {
      return false;
    }
    *out = "m(" + std::string(low.substr(1)) + "+" +
           std::string(high.substr(1)) + ")";
    return true;
  }
};

// Sums equal-length messages byte by byte (the bytes a cycle of one small
// allreduce costs, as it merges).
class SumMerger final : public ControlPlane::Merger {
 public:
  bool Merge(std::string_view low, std::string_view high,
             std::string* out) override {
    if (low.size() != high.size()) return false;
    out->assign(low);
    for (size_t i = 0; i < low.size(); ++i) (*out)[i] += high[i];
    return true;
  }
};

struct Exchanged {
  std::vector<std::string> all;
  std::vector<int> groups;  // empty: none merged
};

// One exchange on every rank with `merger`; what each rank got.
std::vector<Exchanged> ExchangeMerging(
    std::vector<std::unique_ptr<ControlPlane>>& planes,
    ControlPlane::Merger& merger,
    const std::function<std::string(int)>& message) {
  const int n = static_cast<int>(planes.size());
  std::vector<Exchanged> got(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      planes[r]->SetMerger(&merger);
      Status s = planes[r]->Exchange(message(r), &got[r].all, true);
      ASSERT_TRUE(s.ok()) << s.ToString();
      if (const std::vector<int>* g = planes[r]->MergedGroups()) {
        got[r].groups = *g;
      }
    });
  }
  for (auto& t : threads) t.join();
  return got;
}

// Every rank ends with the same groups and messages, merged in the same
// order; where every message merges, one group of all ranks in the
// doubling's order, folds first; where one cannot, the blocks it is in
// stay apart and the rest still merge.
TEST(ControlMergeTest, EveryRankGetsTheSameGroupsMergedAlike) {
  // Separate mergers per rank would do as well: the rule is pure.
  TreeMerger merger;
  for (int n : {2, 3, 4, 5, 6, 8, 12}) {
    for (int odd : {-1, 1, n - 1}) {  // the rank whose message cannot merge
      SCOPED_TRACE("ranks " + std::to_string(n) + ", odd " +
                   std::to_string(odd));
      MemoryStore store;
      auto planes = Planes(n, ControlExchange::kDoubling, store);
      ASSERT_EQ(planes.size(), static_cast<size_t>(n));
      auto got = ExchangeMerging(planes, merger, [&](int r) {
        return (r == odd ? "x" : "m") + std::to_string(r);
      });
      for (int r = 1; r < n; ++r) {
        EXPECT_EQ(got[r].all, got[0].all) << "rank " << r;
        EXPECT_EQ(got[r].groups, got[0].groups) << "rank " << r;
      }
      if (odd < 0) {
        ASSERT_EQ(got[0].groups, std::vector<int>(n, 0));
        // Each rank's number once, inside a tree.
        for (int r = 0; r < n; ++r) {
          EXPECT_NE(got[0].all[0].find(std::to_string(r)), std::string::npos);
        }
        for (int r = 1; r < n; ++r) EXPECT_EQ(got[0].all[r], "");
      }
      if (n == 4 && odd < 0) {
        EXPECT_EQ(got[0].all[0], "m((0+1)+(2+3))");
      }
      if (n == 5 && odd < 0) {
        EXPECT_EQ(got[0].all[0], "m(((0+4)+1)+(2+3))");
      }
      if (odd >= 0 && !got[0].groups.empty()) {
        EXPECT_EQ(got[0].groups[odd], odd);
        EXPECT_EQ(got[0].all[odd], "x" + std::to_string(odd));
      }
    }
  }
}

// Messages that all differ but merge cost each rank log2(n) frames of one
// message each, not the allgather's n - 1 messages.
TEST(ControlMergeTest, MergedDataCostsOneMessagePerTrip) {
  SumMerger merger;
  const size_t bytes = 4096;
  for (int n : {4, 16, 32}) {
    SCOPED_TRACE("ranks " + std::to_string(n));
    MemoryStore store;
    auto planes = Planes(n, ControlExchange::kDoubling, store);
    ASSERT_EQ(planes.size(), static_cast<size_t>(n));
    auto got = ExchangeMerging(planes, merger, [&](int r) {
      return std::string(bytes, static_cast<char>(r + 1));
    });
    const char sum = static_cast<char>(n * (n + 1) / 2);
    EXPECT_EQ(got[n - 1].all[0], std::string(bytes, sum));
    const PerExchange d = Busiest(planes, 1);
    const int log2n = static_cast<int>(std::log2(n));
    EXPECT_EQ(d.frames, log2n);
    // The message, its rank runs and the frame's head.
    EXPECT_LE(d.bytes, d.frames * (bytes + 64));
  }
}

TEST(ControlExchangeTest, TheMeshOnlyUpToItsRanks) {
  EXPECT_EQ(ChooseControlExchange(2, 2), ControlExchange::kMesh);
  EXPECT_EQ(ChooseControlExchange(3, 2), ControlExchange::kDoubling);
  EXPECT_EQ(ChooseControlExchange(4, 4), ControlExchange::kMesh);
  EXPECT_EQ(ChooseControlExchange(4096, 4), ControlExchange::kDoubling);
  EXPECT_EQ(ChooseControlExchange(16, 1), ControlExchange::kDoubling);
}

}  // namespace
}  // namespace hvd::runtime
