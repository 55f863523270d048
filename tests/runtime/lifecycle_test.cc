// init -> shutdown -> init: ranks as threads, each creating and destroying
// its context round after round, as hvd::init() and hvd::shutdown() do in
// one process. Every round must join a new generation, compute the right
// values, and leave no socket, segment or thread behind.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "hvd/hvd.h"
#include "rendezvous/server.h"
#include "runtime/context.h"
#include "runtime/timeline.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;

// Entries of a /proc folder (this process's descriptors).
int CountEntries(const char* dir) {
  int n = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

// Threads of this process with this name (the engine names its own).
int ThreadsNamed(const std::string& name) {
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream f(e.path() / "comm");
    std::string comm;
    std::getline(f, comm);
    n += comm == name;
  }
  return n;
}

std::string ProcessName() {
  std::ifstream f("/proc/self/comm");
  std::string comm;
  std::getline(f, comm);
  return comm;
}

int ShmEntriesOf(const std::string& job_id) {
  const std::string prefix = "hvd-" + job_id.substr(0, 16) + "-";
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator("/dev/shm")) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

// A float32 sum through the engine, in place.
Status Allreduce(Context& ctx, const std::string& name, std::vector<float>& v) {
  Request req;
  req.name = name;
  req.type = OpType::kAllreduce;
  req.dtype = DataType::kFloat32;
  req.count = static_cast<int64_t>(v.size());
  req.shape = {req.count};
  return ctx.engine().Enqueue(req, v.data())->Wait();
}

struct Rounds {
  int size;
  bool shm;
  int late_rank;  // starts every round after the first late; -1: none
};

class LifecycleTest : public ::testing::TestWithParam<Rounds> {};

// Each round allreduces (rank + 1 + round) through the engine, so a round
// that read an older generation's connection or segment shows a wrong sum.
TEST_P(LifecycleTest, TwentyRoundsEachInANewGeneration) {
  const Rounds p = GetParam();
  constexpr int kRounds = 20;
  TestJob job(p.size);
  ASSERT_TRUE(job.ok());
  std::vector<std::thread> threads;
  for (int r = 0; r < p.size; ++r) {
    threads.emplace_back([&, r] {
      WorkerConfig c = job.Config(r);
      c.shm = p.shm;
      int generation = 0;
      for (int round = 0; round < kRounds; ++round) {
        if (r == p.late_rank && round > 0) {
          std::this_thread::sleep_for(milliseconds(150));
        }
        auto ctx = Context::Create(c, generation);
        ASSERT_TRUE(ctx.ok())
            << "round " << round << ": " << ctx.status().ToString();
        ASSERT_EQ((*ctx)->assignment().generation, round + 1);
        generation = (*ctx)->assignment().generation;
        const int rank = (*ctx)->assignment().rank;
        // Two sizes: one that travels with the negotiation, one that takes
        // the data backend.
        for (size_t count : {size_t{3}, size_t{70000}}) {
          std::vector<float> v(count, float(rank + 1 + round));
          Status s = Allreduce(**ctx, "x." + std::to_string(count), v);
          ASSERT_TRUE(s.ok()) << "round " << round << ": " << s.ToString();
          const float want = p.size * (p.size + 1) / 2.0f + p.size * round;
          ASSERT_EQ(v.front(), want) << "round " << round;
          ASSERT_EQ(v.back(), want) << "round " << round;
        }
        ctx->reset();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ShmEntriesOf(job.job_id()), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Transports, LifecycleTest,
    ::testing::Values(Rounds{2, true, -1}, Rounds{3, true, -1},
                      Rounds{2, false, -1}, Rounds{3, false, -1},
                      Rounds{3, true, 2}, Rounds{3, false, 1}),
    [](const auto& info) {
      return std::string(info.param.shm ? "Shm" : "Tcp") + "Np" +
             std::to_string(info.param.size) +
             (info.param.late_rank >= 0
                  ? "LateRank" + std::to_string(info.param.late_rank)
                  : "");
    });

// A process that inits and shuts down again and again keeps the same
// number of open files and threads: every round releases what it made.
TEST(LifecycleTest, RoundsLeaveNoFilesOrThreadsBehind) {
  constexpr int kSize = 2;
  TestJob job(kSize);
  ASSERT_TRUE(job.ok());
  for (bool shm : {true, false}) {
    std::vector<int> fds, threads_seen;
    int engines_left = 0;
    int generation[kSize] = {0, 0};
    for (int round = 0; round < 16; ++round) {
      std::vector<std::thread> ranks;
      for (int r = 0; r < kSize; ++r) {
        ranks.emplace_back([&, r] {
          WorkerConfig c = job.Config(r);
          c.shm = shm;
          auto ctx = Context::Create(c, generation[r]);
          ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
          generation[r] = (*ctx)->assignment().generation;
          std::vector<float> v(100000, 1.0f);
          ASSERT_TRUE(Allreduce(**ctx, "x", v).ok());
        });
      }
      for (auto& t : ranks) t.join();
      fds.push_back(CountEntries("/proc/self/fd"));
      threads_seen.push_back(ThreadsNamed(ProcessName()));
      engines_left += ThreadsNamed("hvd-engine");
    }
    // gRPC keeps a few process-wide descriptors, and its named executor
    // threads come and go with load; a leak of one per round would still
    // grow the later rounds past the early ones. Threads that nobody named
    // (Gloo's, a context's own) must not grow at all.
    const auto early = [](const std::vector<int>& v) {
      return *std::max_element(v.begin() + 1, v.begin() + 4);
    };
    const auto late = [](const std::vector<int>& v) {
      return *std::min_element(v.end() - 3, v.end());
    };
    // A descriptor gRPC opens once, late, is not a leak; one a round is.
    EXPECT_LE(late(fds), early(fds) + 2) << (shm ? "shm" : "tcp");
    EXPECT_EQ(threads_seen.back(), threads_seen[1]) << (shm ? "shm" : "tcp");
    // And no engine thread outlives its context.
    EXPECT_EQ(engines_left, 0) << (shm ? "shm" : "tcp");
  }
  EXPECT_EQ(ShmEntriesOf(job.job_id()), 0);
}

// The public API as Horovod has it: init() while initialized is a no-op
// returning Ok, shutdown() may be called twice, and init() works again after.
TEST(LifecycleTest, PublicInitIsIdempotentAndShutdownSafeTwice) {
  ASSERT_FALSE(hvd::is_initialized());
  EXPECT_TRUE(hvd::shutdown().ok());
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(hvd::init().ok());
    ASSERT_TRUE(hvd::init().ok());
    EXPECT_TRUE(hvd::is_initialized());
    EXPECT_EQ(hvd::size(), 1);
    double v = 2.5;
    ASSERT_TRUE(hvd::allreduce(&v, 1, hvd::ReduceOp::kSum).ok());
    EXPECT_EQ(v, 2.5);
    EXPECT_TRUE(hvd::shutdown().ok());
    EXPECT_TRUE(hvd::shutdown().ok());
    EXPECT_FALSE(hvd::is_initialized());
    EXPECT_EQ(hvd::rank(), -1);
  }
}

// A thread's blocking named allreduces reuse one request: each call takes
// only what it says (an op, scale factors) and none of the call before.
TEST(LifecycleTest, BlockingCallsInARowTakeOnlyTheirOwnArguments) {
  ASSERT_TRUE(hvd::init().ok());
  std::vector<float> x(3, 2.0f);
  const hvd::Tensor t{x.data(), hvd::DataType::kFloat32, {3}};
  ASSERT_TRUE(
      hvd::allreduce("scaled", t, hvd::ReduceOp::kAverage, 3.0, 5.0).ok());
  EXPECT_EQ(x, std::vector<float>(3, 30.0f));
  ASSERT_TRUE(hvd::allreduce("plain", t, hvd::ReduceOp::kSum).ok());
  EXPECT_EQ(x, std::vector<float>(3, 30.0f));
  ASSERT_TRUE(hvd::allreduce("largest", t, hvd::ReduceOp::kMax, 0.5).ok());
  EXPECT_EQ(x, std::vector<float>(3, 15.0f));
  ASSERT_TRUE(hvd::allreduce("plain", t, hvd::ReduceOp::kSum).ok());
  EXPECT_EQ(x, std::vector<float>(3, 15.0f));
  EXPECT_TRUE(hvd::shutdown().ok());
}

// The timeline started and stopped at run time, as Horovod's
// hvd.start_timeline() / stop_timeline(): a valid trace of what ran
// between the two, and nothing when none is recording.
TEST(LifecycleTest, TimelineStartsAndStopsAtRunTime) {
  const std::string dir = ::testing::TempDir();
  const std::string first = dir + "/hvd-timeline-1.json";
  const std::string second = dir + "/hvd-timeline-2.json";
  ASSERT_EQ(hvd::start_timeline(first).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(hvd::init().ok());
  ASSERT_TRUE(hvd::stop_timeline().ok());  // none recording: fine
  float before = 1;
  ASSERT_TRUE(hvd::allreduce("before",
                             hvd::Tensor{&before, hvd::DataType::kFloat32, {1}})
                  .ok());
  ASSERT_TRUE(hvd::start_timeline(first).ok());
  EXPECT_EQ(hvd::start_timeline(second).code(),
            StatusCode::kFailedPrecondition);
  float during = 2;
  ASSERT_TRUE(hvd::allreduce("during",
                             hvd::Tensor{&during, hvd::DataType::kFloat32, {1}})
                  .ok());
  ASSERT_TRUE(hvd::stop_timeline().ok());
  float after = 3;
  ASSERT_TRUE(
      hvd::allreduce("after", hvd::Tensor{&after, hvd::DataType::kFloat32, {1}})
          .ok());
  ASSERT_TRUE(hvd::start_timeline(second).ok());  // again, another file
  ASSERT_TRUE(hvd::stop_timeline().ok());
  ASSERT_TRUE(hvd::shutdown().ok());
  std::ifstream f(first);
  std::string text((std::istreambuf_iterator<char>(f)),
                   std::istreambuf_iterator<char>());
  auto trace = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(trace.is_discarded()) << text;
  std::set<std::string> tensors;
  for (const auto& e : trace) {
    if (e["ph"] == "M") tensors.insert(e["args"]["name"].get<std::string>());
  }
  EXPECT_TRUE(tensors.count("during")) << text;
  EXPECT_FALSE(tensors.count("before")) << text;
  EXPECT_FALSE(tensors.count("after")) << text;
  EXPECT_TRUE(std::filesystem::exists(second));
  std::filesystem::remove(first);
  std::filesystem::remove(second);
}

// HOROVOD_TIMELINE=DYNAMIC: no file until the timeline is started.
TEST(LifecycleTest, DynamicTimelineWritesNothingAtStart) {
  WorkerConfig c;
  c.timeline = "DYNAMIC";
  auto ctx = Context::Create(c);
  ASSERT_TRUE(ctx.ok());
  (*ctx)->engine();
  ASSERT_NE((*ctx)->timeline(), nullptr);
  EXPECT_FALSE((*ctx)->timeline()->enabled());
  EXPECT_FALSE(std::filesystem::exists("DYNAMIC"));
}

}  // namespace
}  // namespace hvd::runtime
