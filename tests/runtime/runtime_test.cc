// Ranks as threads, each with its own runtime::Context, over a real
// rendezvous server on 127.0.0.1:0 and real Gloo TCP connections.
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "rendezvous/server.h"
#include "runtime/context.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;

class World : public TestJob {
 public:
  explicit World(int size) : TestJob(size), size_(size) {}

  WorkerConfig Config(int slot) const {
    WorkerConfig c = TestJob::Config(slot);
    c.gloo_timeout = milliseconds(10000);
    return c;
  }

  // Runs `body` on every rank in its own thread, each with its own context.
  void Run(const std::function<void(Context&)>& body) {
    std::vector<std::thread> threads;
    for (int r = 0; r < size_; ++r) {
      threads.emplace_back([&, r] {
        auto ctx = Context::Create(Config(r));
        ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
        body(**ctx);
      });
    }
    for (auto& t : threads) t.join();
  }

  int size_;
};

class CollectivesTest : public ::testing::TestWithParam<int> {};

TEST_P(CollectivesTest, AssignmentMatchesSlots) {
  World world(GetParam());
  world.Run([&](Context& ctx) {
    const auto& a = ctx.assignment();
    EXPECT_EQ(a.size, GetParam());
    EXPECT_EQ(a.local_size, GetParam());
    EXPECT_EQ(a.local_rank, a.rank);
    EXPECT_EQ(a.cross_size, 1);
  });
}

TEST_P(CollectivesTest, AllreduceSumFloatEveryElement) {
  const int size = GetParam();
  World world(size);
  world.Run([&](Context& ctx) {
    const int rank = ctx.assignment().rank;
    for (size_t count : {size_t{0}, size_t{1}, size_t{17}, size_t{100003}}) {
      std::vector<float> data(count);
      for (size_t i = 0; i < count; ++i) data[i] = rank * 1000.0f + i % 997;
      ASSERT_TRUE(
          ctx.Allreduce(data.data(), count, DataType::kFloat32, false).ok());
      float rank_sum = 1000.0f * size * (size - 1) / 2;
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(data[i], rank_sum + size * static_cast<float>(i % 997))
            << "rank " << rank << " element " << i << " of " << count;
      }
    }
  });
}

TEST_P(CollectivesTest, AllreduceAverageDouble) {
  const int size = GetParam();
  World world(size);
  world.Run([&](Context& ctx) {
    const int rank = ctx.assignment().rank;
    std::vector<double> data(1001);
    for (size_t i = 0; i < data.size(); ++i) data[i] = rank + 0.5 * i;
    ASSERT_TRUE(
        ctx.Allreduce(data.data(), data.size(), DataType::kFloat64, true).ok());
    double mean_rank = (size - 1) / 2.0;
    for (size_t i = 0; i < data.size(); ++i) {
      ASSERT_NEAR(data[i], mean_rank + 0.5 * i, 1e-12) << "element " << i;
    }
  });
}

TEST_P(CollectivesTest, BroadcastFromEveryRoot) {
  const int size = GetParam();
  World world(size);
  world.Run([&](Context& ctx) {
    const int rank = ctx.assignment().rank;
    for (int root = 0; root < size; ++root) {
      std::vector<uint8_t> data(4099, static_cast<uint8_t>(rank));
      ASSERT_TRUE(ctx.backend().Broadcast(data.data(), data.size(), root).ok());
      for (uint8_t b : data) ASSERT_EQ(b, root) << "root " << root;
    }
    std::vector<uint8_t> one(1);
    EXPECT_EQ(ctx.backend().Broadcast(one.data(), 1, size).code(),
              StatusCode::kInvalidArgument);
  });
}

TEST_P(CollectivesTest, BarrierAndRepeatedOps) {
  World world(GetParam());
  world.Run([&](Context& ctx) {
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(ctx.backend().Barrier().ok());
      float x = 1;
      ASSERT_TRUE(ctx.Allreduce(&x, 1, DataType::kFloat32, false).ok());
      ASSERT_EQ(x, GetParam());
    }
  });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CollectivesTest,
                         ::testing::Values(1, 2, 3, 4));

TEST(StandaloneTest, WithoutLauncherIsSizeOne) {
  WorkerConfig c;  // launched = false
  auto ctx = Context::Create(c);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ((*ctx)->assignment().rank, 0);
  EXPECT_EQ((*ctx)->assignment().size, 1);
  double x = 3;
  ASSERT_TRUE((*ctx)->Allreduce(&x, 1, DataType::kFloat64, true).ok());
  EXPECT_EQ(x, 3);
}

TEST(StartupTest, MissingPeerFailsWithinTheJoinTimeout) {
  World world(2);
  WorkerConfig c = world.Config(0);
  c.join_timeout = milliseconds(1000);
  auto start = std::chrono::steady_clock::now();
  auto ctx = Context::Create(c);
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.status().message().find("rank 0"), std::string::npos)
      << ctx.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(15000));
}

// With no HVD_JOIN_TIMEOUT, meeting the peers waits
// HOROVOD_GLOO_TIMEOUT_SECONDS, and the error says whom it waited for.
TEST(StartupTest, MissingPeerFailsWithinTheGlooTimeoutNamingIt) {
  World world(2);
  WorkerConfig c = world.Config(0);
  c.join_timeout = milliseconds(0);
  c.gloo_timeout = milliseconds(1000);
  auto start = std::chrono::steady_clock::now();
  auto ctx = Context::Create(c);
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.status().message().find(
                "waited for the job's ranks: rank 1 (host " + c.host +
                ") has not joined"),
            std::string::npos)
      << ctx.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(15000));
}

TEST(StartupTest, WrongTokenIsRefused) {
  World world(1);
  WorkerConfig c = world.Config(0);
  c.job_token = "wrong";
  auto ctx = Context::Create(c);
  ASSERT_FALSE(ctx.ok());
  EXPECT_EQ(ctx.status().code(), StatusCode::kUnauthenticated);
}

TEST(FailureTest, DeadPeerMakesTheOthersFailFastNotHang) {
  World world(3);
  std::vector<std::thread> threads;
  std::vector<Status> results(3);
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      auto ctx = Context::Create(world.Config(r));
      ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
      float x = 1;
      ASSERT_TRUE((*ctx)->Allreduce(&x, 1, DataType::kFloat32, false).ok());
      if ((*ctx)->assignment().rank == 2) return;  // closes its connections
      std::vector<float> big(1 << 16, 1.0f);
      Status s;
      for (int i = 0; i < 50 && s.ok(); ++i) {
        s = (*ctx)->Allreduce(big.data(), big.size(), DataType::kFloat32,
                              false);
      }
      results[(*ctx)->assignment().rank] = s;
    });
  }
  auto start = std::chrono::steady_clock::now();
  for (auto& t : threads) t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(15000));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].code(), StatusCode::kUnavailable)
        << results[r].ToString();
    EXPECT_NE(results[r].message().find("rank " + std::to_string(r)),
              std::string::npos)
        << results[r].message();
  }
}

}  // namespace
}  // namespace hvd::runtime
