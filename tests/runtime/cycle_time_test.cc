// HOROVOD_CYCLE_TIME over real ranks (threads with their own contexts):
// paced cycles as in Horovod, and cycles on demand by default.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "runtime/context.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;

// Two ranks run allreduce "a", then submit "b", "c" and "d" `gap` apart;
// returns the cycles that had tensors ready (timeline marks) and the
// seconds from the first submission of "b" to the completion of "d".
std::pair<int, double> CyclesForSpacedRequests(double cycle_ms,
                                               milliseconds gap) {
  char tmpl[] = "/tmp/hvd-pacing-XXXXXX";
  int fd = mkstemp(tmpl);
  close(fd);
  std::string path = tmpl;
  double seconds = 0;
  RunRanks(
      2,
      [&](Context& ctx, int rank) {
        // 8192 floats: too large to travel with the negotiation.
        std::vector<std::vector<float>> bufs(4, std::vector<float>(8192, 1));
        auto submit = [&](int i) {
          Request r;
          r.name = std::string(1, static_cast<char>('a' + i));
          r.count = 8192;
          return ctx.engine().Enqueue(r, bufs[i].data());
        };
        ASSERT_TRUE(submit(0)->Wait().ok());
        auto start = std::chrono::steady_clock::now();
        std::vector<std::shared_ptr<Completion>> done;
        for (int i = 1; i < 4; ++i) {
          if (i > 1) std::this_thread::sleep_for(gap);
          done.push_back(submit(i));
        }
        for (auto& d : done) ASSERT_TRUE(d->Wait().ok());
        if (rank == 0) {
          seconds = std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count();
        }
        for (auto& b : bufs) EXPECT_EQ(b[8191], 2.0f);
      },
      [&](WorkerConfig& c) {
        c.engine.cycle_time =
            std::chrono::microseconds(static_cast<int64_t>(cycle_ms * 1000));
        c.timeline = path;
        c.timeline_mark_cycles = true;
      });
  std::ifstream f(path);
  nlohmann::json trace = nlohmann::json::parse(f);
  unlink(path.c_str());
  int cycles = 0;
  for (const auto& e : trace) {
    cycles += e.contains("name") && e["name"] == "CYCLE_START";
  }
  return {cycles, seconds};
}

// HOROVOD_CYCLE_TIME as in Horovod: cycles at least that far apart, and
// what arrives meanwhile negotiated together.
TEST(CycleTimeTest, PacedCyclesBatchWhatArrivesInTheWindow) {
  auto [cycles, seconds] = CyclesForSpacedRequests(500, milliseconds(10));
  EXPECT_EQ(cycles, 2) << "a, then b + c + d together";
  EXPECT_GE(seconds, 0.3) << "b waited for the cycle time after a's cycle";
}

// The default: each request starts a cycle at once.
TEST(CycleTimeTest, OnDemandCyclesStartAtOnce) {
  auto [cycles, seconds] = CyclesForSpacedRequests(0, milliseconds(150));
  EXPECT_GE(cycles, 4) << "a, b, c and d each in a cycle of its own";
}

}  // namespace
}  // namespace hvd::runtime
