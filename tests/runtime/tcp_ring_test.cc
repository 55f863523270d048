// hvd's TCP ring (transport/tcp/tcp_ring.h) when a peer fails: one that
// exits mid-job and one that never joins an allreduce are errors naming a
// rank, within the timeout, never a hang; the ring stays failed after.
// Recursive doubling on buffers larger than the sockets hold, where a
// pair's reduction would overtake its own send if it did not wait for it.
// (The results of every type and op are checked in backend_test's matrix.)
#include "runtime/transport/tcp/tcp_ring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "runtime/context.h"
#include "runtime/transport/tcp/gloo_backend.h"
#include "tests/runtime/memory_store.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;

WorkerConfig TcpConfig(const TestJob& job, int r) {
  WorkerConfig c = job.Config(r);
  c.shm = false;
  c.tcp_streams = 2;
  c.tcp_stream_bytes = 4096;
  c.gloo_timeout = milliseconds(2000);
  return c;
}

// One pure choice per (collective, size, ranks): allreduce takes the
// doubling up to its crossover, the halving up to its own where it saves
// trips (more than three ranks), the ring past both; allgather the
// doubling up to the halving's crossover, then the ring; broadcast the
// tree up to the doubling's, then the chain along the ring; reducescatter
// the doubling up to the doubling's crossover, then the ring; barrier the
// doubling, or the ring where no size takes it; alltoall always the
// pairwise exchange; a crossover of 0 turns its algorithm off.
TEST(CollectiveAlgorithmTest, ChosenByCollectiveSizeAndRanks) {
  using A = TcpAlgorithm;
  using C = Collective;
  const TcpCrossovers standard;  // 64 KiB, 4 MiB
  const TcpCrossovers no_halving{size_t{64} << 10, 0};
  const TcpCrossovers ring_only{0, 0};
  struct Row {
    C c;
    size_t bytes;
    int ranks;
    const TcpCrossovers& x;
    A want;
  };
  const std::vector<Row> rows = {
      {C::kAllreduce, 4, 2, standard, A::kDoubling},
      {C::kAllreduce, 64 << 10, 16, standard, A::kDoubling},
      {C::kAllreduce, (64 << 10) + 4, 16, standard, A::kHalving},
      {C::kAllreduce, 1 << 20, 2, standard, A::kRing},
      {C::kAllreduce, 1 << 20, 3, standard, A::kRing},
      {C::kAllreduce, 1 << 20, 4, standard, A::kHalving},
      {C::kAllreduce, 1 << 20, 4096, standard, A::kHalving},
      {C::kAllreduce, 4 << 20, 8, standard, A::kHalving},
      {C::kAllreduce, (4 << 20) + 4, 8, standard, A::kRing},
      {C::kAllreduce, 16 << 20, 32, standard, A::kRing},
      {C::kAllreduce, 1 << 20, 16, no_halving, A::kRing},
      {C::kAllreduce, 4, 16, ring_only, A::kRing},
      {C::kAllgather, 4, 3, standard, A::kDoubling},
      {C::kAllgather, 4 << 20, 32, standard, A::kDoubling},
      {C::kAllgather, (4 << 20) + 1, 32, standard, A::kRing},
      {C::kAllgather, 4, 32, no_halving, A::kRing},
      {C::kBroadcast, 4, 32, standard, A::kTree},
      {C::kBroadcast, 64 << 10, 5, standard, A::kTree},
      {C::kBroadcast, (64 << 10) + 1, 5, standard, A::kRing},
      {C::kBroadcast, 4 << 20, 5, standard, A::kRing},
      {C::kBroadcast, 16 << 20, 5, standard, A::kRing},
      {C::kBroadcast, 4, 5, ring_only, A::kRing},
      {C::kReducescatter, 64 << 10, 8, standard, A::kDoubling},
      {C::kReducescatter, (64 << 10) + 4, 8, standard, A::kRing},
      {C::kReducescatter, 4, 8, ring_only, A::kRing},
      {C::kAlltoall, 4, 8, standard, A::kPairwise},
      {C::kAlltoall, 16 << 20, 8, ring_only, A::kPairwise},
      {C::kBarrier, 0, 8, standard, A::kDoubling},
      {C::kBarrier, 0, 8, no_halving, A::kDoubling},
      {C::kBarrier, 0, 8, ring_only, A::kRing},
  };
  for (const Row& r : rows) {
    const A got = ChooseTcpAlgorithm(r.c, r.bytes, r.ranks, r.x);
    EXPECT_EQ(got, r.want) << "collective " << static_cast<int>(r.c) << ", "
                           << r.bytes << " bytes on " << r.ranks
                           << " ranks: " << TcpAlgorithmName(got);
  }
}

// Over TCP every collective runs on hvd's sockets and no Gloo mesh is
// ever connected: each rank holds its ring neighbours and doubling
// partners only (with the crossovers as set or autotune's wide ones)
// until the first alltoall, which connects it to every peer, on every
// rank in the same call; alltoalls of uneven splits (nothing, for some
// pairs) deliver every block where it belongs.
TEST(TcpRingTest, NoGlooMeshAndAlltoallsOnHvdsSockets) {
  const int n = 5;
  const uint64_t before = GlooMeshesConnected();
  RunRanks(
      n,
      [&](Context& ctx, int rank) {
        Backend& b = ctx.backend();
        std::vector<float> x(1000, 1.0f);
        ASSERT_TRUE(
            b.Allreduce(x.data(), x.size(), DataType::kFloat32, ReduceOp::kSum)
                .ok());
        EXPECT_EQ(x[999], n);
        std::vector<uint8_t> mine(rank + 1, static_cast<uint8_t>(rank)), all;
        std::vector<size_t> sizes;
        for (int r = 0; r < n; ++r) sizes.push_back(r + 1);
        all.resize(n * (n + 1) / 2);
        ASSERT_TRUE(b.Allgatherv(mine.data(), all.data(), sizes).ok());
        EXPECT_EQ(all.back(), n - 1);
        std::vector<uint8_t> cast(3000, static_cast<uint8_t>(rank));
        ASSERT_TRUE(b.Broadcast(cast.data(), cast.size(), 3).ok());
        EXPECT_EQ(cast[2999], 3);
        std::vector<float> out(2);
        ASSERT_TRUE(b.Reducescatter(x.data(), out.data(),
                                    std::vector<size_t>(n, 2),
                                    DataType::kFloat32, ReduceOp::kSum)
                        .ok());
        EXPECT_EQ(out[0], n * n);
        ASSERT_TRUE(b.Barrier().ok());
        // A 256 KiB broadcast, past the tree's crossover, runs the chain;
        // autotune's wide crossovers (every rank alike) take it onto the
        // tree.
        std::vector<uint8_t> big(256 << 10, static_cast<uint8_t>(rank));
        ASSERT_TRUE(b.Broadcast(big.data(), big.size(), 4).ok());
        EXPECT_EQ(big.back(), 4);
        auto* knob = dynamic_cast<TcpKnob*>(&b);
        ASSERT_NE(knob, nullptr);
        knob->SetWideCrossovers(true);
        std::fill(big.begin(), big.end(), static_cast<uint8_t>(rank));
        ASSERT_TRUE(b.Broadcast(big.data(), big.size(), 1).ok());
        EXPECT_EQ(big.back(), 1);
        knob->SetWideCrossovers(false);
        // Rank r sends (r + p + round) % 3 bytes of value 10 r + p to p.
        for (int round = 0; round < 2; ++round) {
          std::vector<size_t> send(n), recv(n);
          std::vector<uint8_t> in, got;
          for (int p = 0; p < n; ++p) {
            send[p] = (rank + p + round) % 3;
            recv[p] = (p + rank + round) % 3;
            in.insert(in.end(), send[p], static_cast<uint8_t>(10 * rank + p));
          }
          got.assign(std::accumulate(recv.begin(), recv.end(), size_t{0}),
                     0xff);
          Status s = b.Alltoallv(in.data(), send, got.data(), recv);
          ASSERT_TRUE(s.ok()) << s.ToString();
          size_t at = 0;
          for (int p = 0; p < n; ++p) {
            for (size_t i = 0; i < recv[p]; ++i) {
              ASSERT_EQ(got[at++], 10 * p + rank)
                  << "round " << round << " from rank " << p;
            }
          }
        }
      },
      [](WorkerConfig& c) { c.shm = false; });
  EXPECT_EQ(GlooMeshesConnected(), before);
}

// The sockets a rank holds: its ring's and doubling's until the first
// alltoall, then one set of streams to every peer, the same after more
// alltoalls.
TEST(TcpRingTest, TheFirstAlltoallConnectsEveryPeerOnce) {
  const int n = 6, streams = 2;
  MemoryStore store;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      TcpRingOptions o;
      o.rank = r;
      o.size = n;
      o.streams = streams;
      auto ring = TcpRing::Connect(o, store);
      ASSERT_TRUE(ring.ok()) << ring.status().ToString();
      // Neighbours, and partners 1, 2 and 4 away by bit (their fold).
      EXPECT_LT((*ring)->Sockets(), (n - 1) * streams);
      for (int round = 0; round < 3; ++round) {
        std::vector<size_t> ones(n, 4096);
        std::vector<uint8_t> in(n * 4096, static_cast<uint8_t>(r)),
            got(n * 4096);
        Status s = (*ring)->Alltoallv(in.data(), ones, got.data(), ones, store);
        ASSERT_TRUE(s.ok()) << s.ToString();
        for (int p = 0; p < n; ++p) ASSERT_EQ(got[p * 4096 + 4095], p);
        EXPECT_EQ((*ring)->Sockets(), (n - 1) * streams);
      }
    });
  }
  for (auto& t : threads) t.join();
}

TEST(TcpRingTest, APeerThatExitsIsAnErrorNamingARankNotAHang) {
  TestJob job(3);
  ASSERT_TRUE(job.ok());
  std::vector<Status> results(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      auto ctx = Context::Create(TcpConfig(job, r));
      ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
      std::vector<float> big(1 << 16, 1.0f);
      ASSERT_TRUE((*ctx)
                      ->backend()
                      .Allreduce(big.data(), big.size(), DataType::kFloat32,
                                 ReduceOp::kSum)
                      .ok());
      EXPECT_EQ(big[0], 3.0f);
      if (r == 2) return;  // its context closes its sockets
      Status s;
      for (int i = 0; i < 50 && s.ok(); ++i) {
        s = (*ctx)->backend().Allreduce(big.data(), big.size(),
                                        DataType::kFloat32, ReduceOp::kSum);
      }
      results[r] = s;
      // Failed once, failed for good, at once.
      Status again = (*ctx)->backend().Allreduce(
          big.data(), big.size(), DataType::kFloat32, ReduceOp::kSum);
      EXPECT_EQ(again.ToString(), s.ToString());
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(results[r].ok()) << "rank " << r;
    EXPECT_NE(results[r].message().find("rank " + std::to_string(r)),
              std::string::npos)
        << results[r].message();
  }
  // Rank 0 receives from rank 2: it sees the connection close.
  EXPECT_EQ(results[0].code(), StatusCode::kUnavailable)
      << results[0].message();
  EXPECT_NE(results[0].message().find("rank 2 closed its connection"),
            std::string::npos)
      << results[0].message();
}

TEST(TcpRingTest, APeerThatNeverJoinsTimesOut) {
  TestJob job(2);
  ASSERT_TRUE(job.ok());
  Status result;
  bool done = false;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      auto ctx = Context::Create(TcpConfig(job, r));
      ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
      if (r == 1) {
        // Alive, connected, and silent until rank 0 has given up.
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return done; });
        return;
      }
      std::vector<float> big(1 << 16, 1.0f);
      result = (*ctx)->backend().Allreduce(big.data(), big.size(),
                                           DataType::kFloat32, ReduceOp::kSum);
      std::lock_guard<std::mutex> lock(mu);
      done = true;
      cv.notify_all();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(result.code(), StatusCode::kDeadlineExceeded) << result.ToString();
  EXPECT_NE(result.message().find("rank 1 did not keep up"), std::string::npos)
      << result.message();
}

// 2, 3 (rank 2 folds into rank 0) and 5 ranks, 3 streams each way, 16 MiB:
// each pair's two buffers are in flight while both reduce.
TEST(TcpRingTest, DoublingLargeBuffersSumsExactly) {
  for (int n : {2, 3, 5}) {
    TestJob job(n);
    ASSERT_TRUE(job.ok());
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        WorkerConfig c = TcpConfig(job, r);
        c.tcp_streams = 3;
        c.tcp_doubling_bytes = size_t{1} << 40;
        c.gloo_timeout = milliseconds(30000);
        auto ctx = Context::Create(c);
        ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
        std::vector<float> data(1 << 22);
        for (int round = 0; round < 2; ++round) {
          for (size_t i = 0; i < data.size(); ++i) {
            data[i] = static_cast<float>((i % 7) * (r + 1) + round);
          }
          ASSERT_TRUE((*ctx)
                          ->backend()
                          .Allreduce(data.data(), data.size(),
                                     DataType::kFloat32, ReduceOp::kSum)
                          .ok());
          const float ranks = static_cast<float>(n * (n + 1) / 2);
          for (size_t i = 0; i < data.size(); ++i) {
            ASSERT_EQ(data[i], (i % 7) * ranks + round * n)
                << "np " << n << " rank " << r << " i " << i;
          }
        }
      });
    }
    for (auto& t : threads) t.join();
  }
}

// Autotune's streams choice: a step large enough for three streams keeps
// to one once several are off (every rank switching alike), and the sums
// stay exact either way.
TEST(TcpRingTest, SeveralStreamsOffKeepsEveryStepOnOne) {
  MemoryStore store;
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      TcpRingOptions o;
      o.rank = r;
      o.size = 2;
      o.streams = 3;
      o.stream_bytes = 4096;
      o.crossovers.doubling_bytes = 0;
      auto ring = TcpRing::Connect(o, store);
      ASSERT_TRUE(ring.ok()) << ring.status().ToString();
      EXPECT_EQ((*ring)->StreamsFor(1 << 20), 3);
      EXPECT_EQ((*ring)->StreamsFor(8192), 2);
      EXPECT_EQ((*ring)->StreamsFor(4095), 1);
      for (bool several : {false, true}) {
        (*ring)->SetSeveralStreams(several);
        EXPECT_EQ((*ring)->StreamsFor(1 << 20), several ? 3 : 1);
        std::vector<float> data(1 << 18, static_cast<float>(r + 1));
        ASSERT_TRUE((*ring)
                        ->Allreduce(data.data(), data.size(),
                                    DataType::kFloat32, ReduceOp::kSum)
                        .ok());
        for (float v : data) ASSERT_EQ(v, 3.0f);
      }
    });
  }
  for (auto& t : threads) t.join();
}

// The chain broadcast (past the tree's crossover): from every root, on
// rings of 2, 3 and 5 (the root's left neighbour last in the chain), in
// one piece and in several, one stream or three, every rank ends with the
// root's bytes.
TEST(TcpRingTest, ChainBroadcastFromEveryRootDeliversTheRootsBytes) {
  for (int n : {2, 3, 5}) {
    MemoryStore store;
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, n, r] {
        TcpRingOptions o;
        o.rank = r;
        o.size = n;
        o.streams = 3;
        o.stream_bytes = 4096;
        o.crossovers.doubling_bytes = 16;
        auto ring = TcpRing::Connect(o, store);
        ASSERT_TRUE(ring.ok()) << ring.status().ToString();
        for (size_t bytes : {size_t{17}, size_t{1000}, size_t{100001},
                             (size_t{1} << 20) + 3}) {
          for (int root = 0; root < n; ++root) {
            std::vector<uint8_t> buf(bytes);
            for (size_t i = 0; i < bytes; ++i) {
              buf[i] = static_cast<uint8_t>(r * 37 + i * 7);
            }
            Status s = (*ring)->Broadcast(buf.data(), bytes, root);
            ASSERT_TRUE(s.ok()) << s.ToString();
            for (size_t i = 0; i < bytes; ++i) {
              ASSERT_EQ(buf[i], static_cast<uint8_t>(root * 37 + i * 7))
                  << "np " << n << " rank " << r << " root " << root
                  << " bytes " << bytes << " i " << i;
            }
          }
        }
      });
    }
    for (auto& t : threads) t.join();
  }
}

}  // namespace
}  // namespace hvd::runtime
