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

std::string Frame(const std::vector<std::string>& all,
                  const std::vector<bool>& known) {
  std::string f;
  PutPartsFrame(all, known, &f);
  return f;
}

TEST(ControlFrameTest, EqualMessagesTravelOnceAndComeBackWhole) {
  const std::string cached(24, 'c');
  const std::vector<std::string> one_rank = {cached};
  const std::string alone = Frame(one_rank, {true});
  for (size_t n : {size_t{2}, size_t{32}, size_t{4096}}) {
    std::vector<std::string> all(n, cached);
    const std::string f = Frame(all, std::vector<bool>(n, true));
    EXPECT_EQ(f.size(), alone.size()) << n << " equal messages";
    std::vector<std::string> got(n);
    std::vector<bool> known(n, false);
    ASSERT_EQ(f[4], static_cast<char>(FrameKind::kParts));
    ASSERT_TRUE(
        ReadPartsFrame(std::string_view(f).substr(kFrameHead), &got, &known));
    EXPECT_EQ(got, all);
    EXPECT_EQ(known, std::vector<bool>(n, true));
  }
  // Ranks apart, messages that differ, and some that repeat out of order.
  std::vector<std::string> all = {"a", "", "b", "a", "x", "b", "b", "zz"};
  const std::vector<bool> mask = {true, true, false, true,
                                  true, true, true,  false};
  const std::string f = Frame(all, mask);
  std::vector<std::string> got(all.size(), "untouched");
  std::vector<bool> known(all.size(), false);
  ASSERT_TRUE(
      ReadPartsFrame(std::string_view(f).substr(kFrameHead), &got, &known));
  EXPECT_EQ(known, mask);
  for (size_t r = 0; r < all.size(); ++r) {
    EXPECT_EQ(got[r], mask[r] ? all[r] : "untouched") << r;
  }
}

TEST(ControlFrameTest, MalformedFramesAreRefused) {
  std::vector<std::string> all = {"a", "b", "c"};
  const std::string f = Frame(all, {true, true, true});
  const std::string_view body = std::string_view(f).substr(kFrameHead);
  for (size_t cut = 0; cut < body.size(); ++cut) {
    std::vector<std::string> got(3);
    std::vector<bool> known(3);
    EXPECT_FALSE(ReadPartsFrame(body.substr(0, cut), &got, &known)) << cut;
  }
  // Naming a rank past the job's.
  std::vector<std::string> got(2);
  std::vector<bool> known(2);
  EXPECT_FALSE(ReadPartsFrame(body, &got, &known));
  // Trailing bytes.
  std::vector<std::string> three(3);
  std::vector<bool> known3(3);
  EXPECT_FALSE(ReadPartsFrame(std::string(body) + "x", &three, &known3));
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
  std::vector<std::unique_ptr<ControlPlane>> planes(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      auto p = CreateTcpControlPlane(Options(r, size, exchange), store);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      planes[r] = std::move(*p);
    });
  }
  for (auto& t : threads) t.join();
  return planes;
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
  std::string one_frame;
  PutPartsFrame({cached}, {true}, &one_frame);
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
    // frame is less).
    if (pow2) {
      EXPECT_EQ(d.bytes, d.frames * one_frame.size());
    } else {
      EXPECT_LE(d.bytes, d.frames * (one_frame.size() + 12));
    }
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

TEST(ControlExchangeTest, TheMeshOnlyUpToItsRanks) {
  EXPECT_EQ(ChooseControlExchange(2, 2), ControlExchange::kMesh);
  EXPECT_EQ(ChooseControlExchange(3, 2), ControlExchange::kDoubling);
  EXPECT_EQ(ChooseControlExchange(4, 4), ControlExchange::kMesh);
  EXPECT_EQ(ChooseControlExchange(4096, 4), ControlExchange::kDoubling);
  EXPECT_EQ(ChooseControlExchange(16, 1), ControlExchange::kDoubling);
}

}  // namespace
}  // namespace hvd::runtime
