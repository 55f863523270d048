// The steady state's shortcuts (express.cc): express cycles complete a
// cached small allreduce from the data every rank sent along, and the fast
// lane runs a blocking one's cycle straight from the caller. Both must give
// what the full negotiation gives, fall back to it whenever the ranks'
// messages differ, and keep every error it reports. Ranks are threads with
// their own contexts, over shared memory.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/context.h"
#include "runtime/engine/engine.h"
#include "runtime/engine/message.h"
#include "runtime/engine/negotiator.h"
#include "runtime/engine/response_cache.h"
#include "runtime/transport/local/local.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;

// Blocking allreduces of a few names over and over: after each name's
// first (which fills the response cache) they go through the fast lane,
// with the exact sums, averages, scale factors, minima and maxima the
// full path gives.
TEST(EngineExpressTest, FastLaneGivesTheNegotiationsResults) {
  for (int size : {2, 3}) {
    RunRanks(size, [&](Context& ctx, int rank) {
      Engine& engine = ctx.engine();
      for (int step = 0; step < 60; ++step) {
        std::vector<float> x(5, static_cast<float>(rank + step));
        Request r = AllreduceRequest("fast." + std::to_string(step % 4), 5);
        float want = 0;
        for (int q = 0; q < size; ++q) want += static_cast<float>(q + step);
        switch (step % 4) {
          case 1:
            r.average = true;
            want /= static_cast<float>(size);
            break;
          case 2:
            r.prescale = 0.5;
            r.postscale = 4;
            want *= 2;
            break;
          case 3:
            r.reduce = ReduceOp::kMax;
            want = static_cast<float>(size - 1 + step);
            break;
        }
        Status s = engine.AllreduceNow(r, x.data());
        ASSERT_TRUE(s.ok()) << s.ToString();
        ASSERT_EQ(x, std::vector<float>(5, want)) << "step " << step;
      }
      (void)rank;
    });
  }
}

// Over TCP past two ranks the control plane merges the ranks' data on the
// way (eager_merge.h, by recursive doubling): the results are the sums,
// averages, scaled sums and maxima the full path gives, and every rank
// gets the same bits where a float sum's order matters (rank parity picks
// 1e8 or 1, so each partial sum rounds).
TEST(EngineExpressTest, OverTcpMergedDataGivesEveryRankTheSameBits) {
  for (int size : {3, 5}) {
    SCOPED_TRACE("ranks " + std::to_string(size));
    std::vector<std::vector<float>> sums(size);
    std::vector<uint64_t> merges(size);
    RunRanks(
        size,
        [&](Context& ctx, int rank) {
          Engine& engine = ctx.engine();
          for (int step = 0; step < 48; ++step) {
            std::vector<float> x(7);
            for (size_t i = 0; i < x.size(); ++i) {
              x[i] = (rank % 2 ? 1e8f : 1.0f) * static_cast<float>(i + 1) +
                     0.37f * static_cast<float>(rank + step);
            }
            Request r = AllreduceRequest("tcp." + std::to_string(step % 4), 7);
            if (step % 4 == 1) r.average = true;
            if (step % 4 == 2) {
              r.prescale = 0.5;  // not merged: each rank's data is scaled
              r.postscale = 4;
            }
            if (step % 4 == 3) r.reduce = ReduceOp::kMax;
            std::vector<float> want(7, 0);
            Status s = engine.AllreduceNow(r, x.data());
            ASSERT_TRUE(s.ok()) << s.ToString();
            if (step % 4 == 3) {
              for (size_t i = 0; i < x.size(); ++i) {
                float most = -1;
                for (int q = 0; q < size; ++q) {
                  most = std::max(
                      most, (q % 2 ? 1e8f : 1.0f) * static_cast<float>(i + 1) +
                                0.37f * static_cast<float>(q + step));
                }
                ASSERT_EQ(x[i], most) << "step " << step;
              }
            }
            sums[rank].insert(sums[rank].end(), x.begin(), x.end());
          }
          merges[rank] = ctx.control().traffic().merges;
        },
        [](WorkerConfig& c) { c.shm = false; });
    for (int r = 1; r < size; ++r) {
      ASSERT_EQ(sums[r].size(), sums[0].size());
      EXPECT_EQ(std::memcmp(sums[r].data(), sums[0].data(),
                            sums[0].size() * sizeof(float)),
                0)
          << "rank " << r;
    }
    // And the sums are the sums, to float's precision.
    for (int step = 0; step < 48; step += 4) {
      double want = 0;
      for (int q = 0; q < size; ++q) {
        want += (q % 2 ? 1e8 : 1.0) + 0.37 * (q + step);
      }
      EXPECT_NEAR(sums[0][step * 7], want, want * 1e-6) << "step " << step;
    }
    // Every rank below the largest power of two merges (one past it only
    // folds in and gets the result).
    const int q = size < 4 ? 2 : 4;
    for (int r = 0; r < q; ++r) {
      EXPECT_GT(merges[r], 0u) << "rank " << r;
    }
  }
}

// One tensor's fast-lane calls in a row reuse the message of the call
// before but for the data: each call's sum is of that call's data, and a
// second tensor of as many bytes in between (another name) does not leave
// its name or data behind. (Which calls take the fast lane depends on the
// threads' timing; every call must give its own sum either way.)
TEST(EngineExpressTest, FastLaneCallsInARowCarryEachCallsData) {
  RunRanks(2, [&](Context& ctx, int rank) {
    Engine& engine = ctx.engine();
    for (int step = 0; step < 40; ++step) {
      const bool other = step % 10 == 9;
      std::vector<int32_t> x(3, (rank + 1) * (step + 1));
      Request r = AllreduceRequest(other ? "row.other" : "row", 3);
      r.dtype = DataType::kInt32;
      if (other) r.reduce = ReduceOp::kMax;
      ASSERT_TRUE(engine.AllreduceNow(r, x.data()).ok());
      const int32_t want = other ? 2 * (step + 1) : 3 * (step + 1);
      ASSERT_EQ(x, std::vector<int32_t>(3, want)) << "step " << step;
    }
  });
}

// Queued allreduces (Enqueue, then Wait) of cached tensors complete in
// express cycles with the same results.
TEST(EngineExpressTest, ExpressCyclesCompleteQueuedCachedAllreduces) {
  RunRanks(2, [&](Context& ctx, int rank) {
    Engine& engine = ctx.engine();
    for (int step = 0; step < 30; ++step) {
      std::vector<double> x(3, rank + 0.25 * step);
      Request r = AllreduceRequest("queued", 3);
      r.dtype = DataType::kFloat64;
      Status s =
          engine.Wait(engine.Enqueue(r, x.data(), nullptr, false), false);
      ASSERT_TRUE(s.ok()) << s.ToString();
      ASSERT_EQ(x, std::vector<double>(3, 1 + 0.5 * step));
    }
    // Queued requests never take the fast lane.
    EXPECT_EQ(engine.fast_lane_allreduces(), 0u);
  });
}

// One rank takes the fast lane while the other's cycle carries more (a
// second tensor queued first): the messages differ, the fast-lane call
// becomes an ordinary request of that cycle, and both complete right.
TEST(EngineExpressTest, DifferingMessagesFallBackToTheNegotiation) {
  RunRanks(2, [&](Context& ctx, int rank) {
    Engine& engine = ctx.engine();
    std::vector<float> a(4), b(4);
    for (int step = 0; step < 20; ++step) {
      std::fill(a.begin(), a.end(), static_cast<float>(rank + 1));
      std::fill(b.begin(), b.end(), static_cast<float>(10 * (rank + 1)));
      if (rank == 0) {
        // Fast lane for "a" (cached after the first step), then "b".
        ASSERT_TRUE(
            engine.AllreduceNow(AllreduceRequest("a", 4), a.data()).ok());
        ASSERT_TRUE(
            engine.AllreduceNow(AllreduceRequest("b", 4), b.data()).ok());
      } else {
        // "b" queued before "a": this rank's cycles name both.
        auto hb = engine.Enqueue(AllreduceRequest("b", 4), b.data());
        auto ha = engine.Enqueue(AllreduceRequest("a", 4), a.data());
        ASSERT_TRUE(engine.Wait(ha).ok());
        ASSERT_TRUE(engine.Wait(hb).ok());
      }
      ASSERT_EQ(a, std::vector<float>(4, 3.f)) << step;
      ASSERT_EQ(b, std::vector<float>(4, 30.f)) << step;
    }
    (void)rank;
  });
}

// A tensor whose metadata changes on one rank after it was cached: that
// rank sends it in full, the other's fast-lane message differs, and both
// get the negotiation's mismatch error naming the tensor.
TEST(EngineExpressTest, AMismatchAfterTheCacheIsStillReported) {
  RunRanks(2, [&](Context& ctx, int rank) {
    Engine& engine = ctx.engine();
    std::vector<float> x(6, 1.f);
    for (int step = 0; step < 5; ++step) {
      ASSERT_TRUE(engine.AllreduceNow(AllreduceRequest("m", 4), x.data()).ok());
    }
    Status s =
        engine.AllreduceNow(AllreduceRequest("m", rank == 1 ? 6 : 4), x.data());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("'m'"), std::string::npos) << s.ToString();
  });
}

// A blocking call for a name an uncollected request still holds is
// refused, as a queued one is, whether or not the fast lane could run.
TEST(EngineExpressTest, ANameHeldElsewhereIsRefused) {
  RunRanks(2, [&](Context& ctx, int rank) {
    Engine& engine = ctx.engine();
    std::vector<float> x(4, 1.f), y(4, 1.f);
    ASSERT_TRUE(
        engine.AllreduceNow(AllreduceRequest("held", 4), x.data()).ok());
    auto first = engine.Enqueue(AllreduceRequest("held", 4), x.data());
    Status s = engine.AllreduceNow(AllreduceRequest("held", 4), y.data());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("already in flight"), std::string::npos)
        << s.ToString();
    EXPECT_TRUE(engine.Wait(first).ok());
    // Neither rank shuts down (which would fail the other's refused call
    // as "shutting down" instead) before both made it.
    EXPECT_TRUE(
        engine.AllreduceNow(AllreduceRequest("after", 4), y.data()).ok());
    (void)rank;
  });
}

// One rank's fast-lane call that the other never makes: the fast lane's
// exchange wakes the other's idle engine, the call becomes a pending
// request, and the stall inspector names it and its missing rank, then
// stops the job.
TEST(EngineExpressTest, AFastLaneCallNobodyElseMakesIsAStall) {
  StallWarnings warnings;
  RunRanks(
      2,
      [&](Context& ctx, int rank) {
        Engine& engine = ctx.engine();
        std::vector<float> x(4, 1.f);
        for (int step = 0; step < 3; ++step) {
          ASSERT_TRUE(
              engine.AllreduceNow(AllreduceRequest("lone", 4), x.data()).ok());
        }
        Status s;
        if (rank == 0) {
          s = engine.AllreduceNow(AllreduceRequest("lone", 4), x.data());
        } else {
          s = engine.Enqueue(AllreduceRequest("other", 4), x.data())->Wait();
        }
        EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
        EXPECT_NE(s.message().find("stall inspector"), std::string::npos)
            << s.ToString();
      },
      [&](WorkerConfig& c) { warnings.Configure(c); });
  const std::vector<std::string> said = warnings.said();
  ASSERT_FALSE(said.empty());
  EXPECT_NE(said[0].find("'lone' (missing ranks: 1)"), std::string::npos)
      << said[0];
}

// Rank 0 of two, whose peer is scripted: each exchange the peer sends this
// rank's own message back (the steady state: the same tensor, the same
// data) or a message with nothing in it (a peer whose engine answered
// before its caller came). A scripted reply is either an answer to this
// rank's next exchange or an exchange the peer starts by itself (which
// wakes this rank's engine). Which path each call takes is then certain.
class ScriptedPeer final : public ControlPlane {
 public:
  enum Reply { kMirror, kNothing };
  void Then(Reply r, bool peer_starts) {
    std::lock_guard<std::mutex> lock(mu_);
    script_.push_back({r, peer_starts});
    cv_.notify_all();
  }
  int exchanges() {
    std::lock_guard<std::mutex> lock(mu_);
    return exchanges_;
  }
  Status Exchange(const std::string& mine, std::vector<std::string>* all,
                  bool) override {
    Reply r = kMirror;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++exchanges_;
      if (!script_.empty()) {
        r = script_.front().first;
        script_.pop_front();
      }
    }
    *all = {mine, r == kMirror ? mine : Nothing()};
    return Status::Ok();
  }
  void Wait(std::chrono::milliseconds timeout, bool* peer) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return notified_ || StartedLocked(); });
    notified_ = false;
    *peer = StartedLocked();
  }
  void Notify() override {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
    cv_.notify_all();
  }
  bool Drivable() const override { return true; }
  bool PeerWaiting() override {
    std::lock_guard<std::mutex> lock(mu_);
    return StartedLocked();
  }
  bool AwaitPeer() override { return PeerWaiting(); }

 private:
  // A cycle's message with nothing in it (message.h's format).
  static std::string Nothing() {
    std::string m, requests;
    PutValue<uint8_t>(m, 0);
    PutBytes(m, "");
    PutRequests(requests, 0, {});
    PutBytes(m, requests);
    PutValue<uint32_t>(m, 0);
    PutKnobs(m, std::nullopt);
    return m;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool StartedLocked() const {
    return !script_.empty() && script_.front().second;
  }
  std::deque<std::pair<Reply, bool>> script_;  // (reply, the peer starts)
  bool notified_ = false;
  int exchanges_ = 0;
};

// This rank (0 of two) on the local backend, its peer scripted.
struct ScriptedRank {
  explicit ScriptedRank(EngineOptions options = {})
      : engine(TwoRanks(options), &backends, &peer) {}
  static EngineOptions TwoRanks(EngineOptions o) {
    o.size = 2;
    return o;
  }
  BackendSet backends{CreateLocalBackend(), "local"};
  ScriptedPeer peer;
  Engine engine;
};

TEST(EngineFastLaneTest, EachPathTakenWhenItShouldBe) {
  ScriptedRank rank;
  Engine& engine = rank.engine;
  ScriptedPeer& peer = rank.peer;
  std::vector<float> x(4);
  auto run = [&](bool queued) {
    std::fill(x.begin(), x.end(), 1.5f);
    Request r = AllreduceRequest("t", 4);
    Status s = queued ? engine.Wait(engine.Enqueue(r, x.data(), nullptr,
                                                   /*notify=*/false),
                                    /*notified=*/false)
                      : engine.AllreduceNow(r, x.data());
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(x, std::vector<float>(4, 3.f));
  };
  // Not cached yet: negotiated in full (the data came along).
  run(false);
  EXPECT_EQ(engine.express_allreduces(), 0u);
  EXPECT_EQ(peer.exchanges(), 1);
  // Cached, nothing else in flight: the fast lane, one exchange.
  run(false);
  EXPECT_EQ(engine.fast_lane_allreduces(), 1u);
  EXPECT_EQ(engine.express_allreduces(), 1u);
  EXPECT_EQ(peer.exchanges(), 2);
  // Queued and cached: an express cycle.
  run(true);
  EXPECT_EQ(engine.fast_lane_allreduces(), 1u);
  EXPECT_EQ(engine.express_allreduces(), 2u);
  EXPECT_EQ(peer.exchanges(), 3);
  // The peer's first message has nothing: the fast-lane call becomes a
  // pending request by its bit, and the next cycle (the peer's) completes
  // it in full.
  peer.Then(ScriptedPeer::kNothing, /*peer_starts=*/false);
  peer.Then(ScriptedPeer::kMirror, /*peer_starts=*/true);
  run(false);
  EXPECT_EQ(engine.fast_lane_fallbacks(), 1u);
  EXPECT_EQ(engine.fast_lane_allreduces(), 1u);
  EXPECT_EQ(engine.express_allreduces(), 2u);
  EXPECT_EQ(peer.exchanges(), 5);
  // And the steady state again.
  run(false);
  EXPECT_EQ(engine.fast_lane_allreduces(), 2u);
  EXPECT_EQ(peer.exchanges(), 6);
}

// The fast lane checks what is in flight under the engine's lock once,
// then only whether anything was queued since: a request of the same name
// queued after a fast-lane call is still refused the next one, which runs
// again once it is done.
TEST(EngineFastLaneTest, ARequestQueuedAfterAFastCallIsSeenByTheNext) {
  ScriptedRank rank;
  Engine& engine = rank.engine;
  std::vector<float> x(4, 1.f), y(4, 1.f);
  const Request r = AllreduceRequest("t", 4);
  ASSERT_TRUE(engine.AllreduceNow(r, x.data()).ok());  // cached
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(engine.AllreduceNow(r, x.data()).ok());
  }
  EXPECT_EQ(engine.fast_lane_allreduces(), 3u);
  auto queued = engine.Enqueue(r, y.data(), nullptr, /*notify=*/false);
  Status s = engine.AllreduceNow(r, x.data());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("already in flight"), std::string::npos)
      << s.ToString();
  ASSERT_TRUE(engine.Wait(queued, /*notified=*/false).ok());
  EXPECT_EQ(y, std::vector<float>(4, 2.f));
  ASSERT_TRUE(engine.AllreduceNow(r, x.data()).ok());
  EXPECT_EQ(engine.fast_lane_allreduces(), 4u);
}

// Cached tensors too large to ride along, queued together: once cached,
// a cycle whose every message names the same ones runs them as an express
// group (no decoding, no negotiation); one whose peer names nothing goes
// through the negotiation, and the group completes a cycle later.
TEST(EngineFastLaneTest, CachedGroupsRunWithoutNegotiating) {
  EngineOptions options;
  options.eager_tensor_bytes = 0;  // no data rides along
  ScriptedRank rank(options);
  Engine& engine = rank.engine;
  ScriptedPeer& peer = rank.peer;
  std::vector<std::vector<float>> xs(5, std::vector<float>(8));
  auto step = [&](float v) {
    std::vector<std::pair<Request, void*>> group;
    for (int i = 0; i < 5; ++i) {
      std::fill(xs[i].begin(), xs[i].end(), v + i);
      Request r = AllreduceRequest("g" + std::to_string(i), 8);
      r.postscale = 2;  // the local backend's sum is the identity
      group.push_back({r, xs[i].data()});
    }
    for (auto& done : engine.EnqueueGroup(std::move(group))) {
      Status s = engine.Wait(done);
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ(xs[i], std::vector<float>(8, 2 * (v + i))) << i;
    }
  };
  step(1);  // not cached yet: in full
  EXPECT_EQ(engine.express_groups(), 0u);
  step(2);
  EXPECT_EQ(engine.express_groups(), 1u);
  peer.Then(ScriptedPeer::kNothing, /*peer_starts=*/false);
  peer.Then(ScriptedPeer::kMirror, /*peer_starts=*/true);
  step(3);
  EXPECT_EQ(engine.express_groups(), 1u);
  step(4);
  EXPECT_EQ(engine.express_groups(), 2u);
  // Nothing took the single-tensor paths.
  EXPECT_EQ(engine.express_allreduces(), 0u);
}

TEST(CachedIdsTest, BitsWithoutTrailingZeros) {
  CachedIds ids;
  EXPECT_TRUE(ids.empty());
  EXPECT_TRUE(ids.insert(17));
  EXPECT_FALSE(ids.insert(17));
  EXPECT_TRUE(ids.insert(3));
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids.first(), 3u);
  EXPECT_EQ(ids.ids(), (std::vector<uint32_t>{3, 17}));
  EXPECT_EQ(ids.bits(), std::string("\x08\x00\x02", 3));
  EXPECT_TRUE(ids.erase(17));
  EXPECT_FALSE(ids.erase(17));
  // The same set as built afresh: the same bytes.
  EXPECT_EQ(ids.bits(), std::string("\x08", 1));
  EXPECT_TRUE(ids.contains(3));
  EXPECT_FALSE(ids.contains(17));
  ids.clear();
  EXPECT_EQ(ids.bits(), "");
}

// An express group's ids are kept for its Finish while the cache's
// generation holds: it moves whenever an id may come to mean another
// request, and only then.
TEST(ResponseCacheGenerationTest, MovesWhenAnIdMayChangeMeaning) {
  ResponseCache cache(2);
  Request a = AllreduceRequest("a", 1), b = AllreduceRequest("b", 1),
          c = AllreduceRequest("c", 1);
  uint64_t g = cache.generation();
  auto moved = [&] {
    const bool m = cache.generation() != g;
    g = cache.generation();
    return m;
  };
  EXPECT_FALSE(cache.Put(a));
  EXPECT_TRUE(moved());
  EXPECT_FALSE(cache.Put(b));
  EXPECT_TRUE(moved());
  cache.Touch(*cache.Lookup(a));  // b is now the oldest
  EXPECT_FALSE(moved());
  EXPECT_EQ(cache.Get(1).name, "b");
  ASSERT_TRUE(cache.Put(c));  // evicts b: id 1 is c's now
  EXPECT_TRUE(moved());
  EXPECT_EQ(cache.Get(1).name, "c");
  Request a5 = a;
  a5.count = 5;
  EXPECT_FALSE(cache.Put(a5));  // id 0 keeps the name, not the metadata
  EXPECT_TRUE(moved());
  EXPECT_TRUE(cache.Erase("c"));
  EXPECT_TRUE(moved());
  EXPECT_FALSE(cache.Erase("c"));
  EXPECT_FALSE(moved());
  cache.Clear();
  EXPECT_TRUE(moved());
}

TEST(NegotiatorIdleTest, BusyWhileSomethingIsHalfNegotiated) {
  Negotiator n(2);
  ResponseCache cache(4);
  EXPECT_TRUE(n.Idle());
  Request r = AllreduceRequest("t", 2);
  r.shape = {2};
  std::vector<RankOffer> offers(2);
  offers[0].requests = {r};
  auto first = n.Round(offers, cache, std::chrono::steady_clock::now());
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(n.Idle());  // rank 1 has not named it
  offers[0].requests.clear();
  offers[1].requests = {r};
  auto second = n.Round(offers, cache, std::chrono::steady_clock::now());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->ready.size(), 1u);
  EXPECT_TRUE(n.Idle());
}

}  // namespace
}  // namespace hvd::runtime
