// A waiting caller drives the engine (Engine::Wait): the cycles run on the
// calling thread when they can, and are left to the engine thread when a
// peer is late, cycles are paced, or the peer shuts down. Ranks are
// threads with their own contexts, over shared memory and over TCP.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "runtime/context.h"
#include "runtime/engine/engine.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;

bool g_tcp = false;  // the parameter: TCP's control plane, not the segment's

class EngineDriveTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { g_tcp = GetParam(); }
};

// Two ranks with a 1 MiB fusion threshold; `tune` may change more.
void RunRanks(int size, const std::function<void(Context&, int)>& body,
              const std::function<void(WorkerConfig&)>& tune = nullptr) {
  hvd::runtime::RunRanks(size, body, [&](WorkerConfig& c) {
    c.engine.fusion_threshold_bytes = 1 << 20;
    c.shm = !g_tcp;
    if (tune) tune(c);
  });
}

// A blocking call's wait runs the cycles on the calling thread: with every
// rank's caller waiting, the cycles are theirs, and the results are right
// (small tensors through the negotiation, larger ones through the
// backend), whichever thread ran them.
TEST_P(EngineDriveTest, WaitingCallersRunTheCyclesThemselves) {
  RunRanks(2, [&](Context& ctx, int rank) {
    Engine& engine = ctx.engine();
    for (int step = 0; step < 200; ++step) {
      const size_t n = step % 2 ? 4 : 70000;
      std::vector<float> x(n, static_cast<float>(rank + step));
      Request r;
      r.name = "drive." + std::to_string(step % 5);
      r.count = static_cast<int64_t>(n);
      auto done = engine.Enqueue(r, x.data(), nullptr, /*notify=*/false);
      ASSERT_TRUE(engine.Wait(done, /*notified=*/false).ok()) << step;
      ASSERT_EQ(x.front(), static_cast<float>(1 + 2 * step)) << step;
      ASSERT_EQ(x.back(), static_cast<float>(1 + 2 * step)) << step;
    }
    EXPECT_GT(engine.cycles_by_callers(), 0u) << "rank " << rank;
  });
}

// A caller whose peer comes late gives up spinning and leaves the cycle to
// the engine thread, which completes it; a peer that waits the usual way
// (its engine thread) meets one whose caller drives.
TEST_P(EngineDriveTest, ALatePeerIsLeftToTheEngineThread) {
  RunRanks(2, [&](Context& ctx, int rank) {
    Engine& engine = ctx.engine();
    for (int step = 0; step < 6; ++step) {
      std::vector<float> x(16, 1.f);
      Request r;
      r.name = "late." + std::to_string(step);
      r.count = 16;
      Status s;
      if (rank == 1) {
        std::this_thread::sleep_for(milliseconds(step % 2 ? 0 : 50));
        s = engine.Enqueue(r, x.data())->Wait();  // the engine thread's
      } else {
        s = engine.Wait(engine.Enqueue(r, x.data(), nullptr, false), false);
      }
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(x, std::vector<float>(16, 2.f)) << step;
    }
  });
}

// Paced cycles (HOROVOD_CYCLE_TIME) gather what arrives in between: a
// waiting caller leaves them to the engine thread.
TEST_P(EngineDriveTest, PacedCyclesStayWithTheEngineThread) {
  RunRanks(
      2,
      [&](Context& ctx, int rank) {
        Engine& engine = ctx.engine();
        std::vector<float> x(8, static_cast<float>(rank));
        Request r;
        r.name = "paced";
        r.count = 8;
        ASSERT_TRUE(
            engine.Wait(engine.Enqueue(r, x.data(), nullptr, false), false)
                .ok());
        EXPECT_EQ(x, std::vector<float>(8, 1.f));
        EXPECT_EQ(engine.cycles_by_callers(), 0u);
      },
      [](WorkerConfig& c) { c.engine.cycle_time = milliseconds(5); });
}

// A driving caller whose peer shuts down gets the shutdown's error.
TEST_P(EngineDriveTest, APeersShutdownEndsADrivingCallersWait) {
  RunRanks(2, [&](Context& ctx, int rank) {
    std::vector<float> x(8);
    Request warm;
    warm.name = "warm";
    warm.count = 8;
    Engine& engine = ctx.engine();
    ASSERT_TRUE(
        engine.Wait(engine.Enqueue(warm, x.data(), nullptr, false), false)
            .ok());
    if (rank == 1) {
      std::this_thread::sleep_for(milliseconds(30));
      engine.Shutdown();
      return;
    }
    Request r;
    r.name = "orphan";
    r.count = 8;
    Status s = engine.Wait(engine.Enqueue(r, x.data(), nullptr, false), false);
    EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
    EXPECT_NE(s.message().find("shutting down"), std::string::npos);
  });
}

// A rank whose callers drove its cycles, and whose caller is then away
// for longer than the peers' exchange timeout: its engine thread, which
// sleeps through peers' exchanges while its callers drive, still answers
// (woken by the peer that gave up spinning, or once it no longer expects
// a caller), so the peer's exchange does not time out; the allreduce
// completes once the caller is back.
TEST_P(EngineDriveTest, ARungEngineThreadAnswersForAnAbsentCaller) {
  RunRanks(
      2,
      [&](Context& ctx, int rank) {
        Engine& engine = ctx.engine();
        std::vector<float> x(8);
        Request r;
        r.name = "away";
        r.count = 8;
        for (int step = 0; step < 20; ++step) {
          std::fill(x.begin(), x.end(), static_cast<float>(rank));
          if (step == 19 && rank == 0) {
            std::this_thread::sleep_for(milliseconds(1500));
          }
          Status s = rank == 0 || step < 19
                         ? engine.Wait(engine.Enqueue(r, x.data(), nullptr,
                                                      /*notify=*/false),
                                       /*notified=*/false)
                         : engine.Enqueue(r, x.data())->Wait();
          ASSERT_TRUE(s.ok())
              << "rank " << rank << " step " << step << ": " << s.ToString();
          ASSERT_EQ(x, std::vector<float>(8, 1.f)) << step;
        }
        EXPECT_GT(engine.cycles_by_callers(), 0u) << "rank " << rank;
      },
      [](WorkerConfig& c) { c.gloo_timeout = milliseconds(500); });
}

INSTANTIATE_TEST_SUITE_P(Planes, EngineDriveTest, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "tcp" : "shm";
                         });

}  // namespace
}  // namespace hvd::runtime
