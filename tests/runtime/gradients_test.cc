// GradientReducer: Horovod's DistributedOptimizer averaging (local
// accumulation over passes, fp16 on the wire) across ranks as threads.
#include "runtime/gradients.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/context.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

struct GradCase {
  int size;
  int passes;
  Compression compression;
  bool average_aggregated;
};

class GradientReducerTest : public ::testing::TestWithParam<GradCase> {};

TEST_P(GradientReducerTest, AccumulatesThenAveragesAcrossRanks) {
  const GradCase c = GetParam();
  hvd::runtime::RunRanks(c.size, [&](Context& ctx, int rank) {
    GradientReducer reducer(&ctx.engine(),
                            {c.passes, c.compression, c.average_aggregated});
    for (int step = 0; step < 3; ++step) {
      for (int pass = 0; pass < c.passes; ++pass) {
        // Two gradients; values small integers so fp16 is exact.
        std::vector<float> w(300, static_cast<float>(rank + pass + step));
        std::vector<float> b(7, 1.0f);
        ASSERT_TRUE(reducer.Add("w", w.data(), w.size()).ok());
        ASSERT_TRUE(reducer.Add("b", b.data(), b.size()).ok());
        auto stepped = reducer.EndPass();
        ASSERT_TRUE(stepped.ok()) << stepped.status().ToString();
        EXPECT_EQ(*stepped, pass == c.passes - 1);
        if (!*stepped) continue;
        // sum over passes p of (r + p + step), averaged over ranks r.
        double want_w = 0, want_b = c.passes;
        for (int r = 0; r < c.size; ++r) {
          for (int p = 0; p < c.passes; ++p) want_w += r + p + step;
        }
        want_w /= c.size;
        if (c.average_aggregated) {
          want_w /= c.passes;
          want_b /= c.passes;
        }
        for (float x : w) ASSERT_NEAR(x, want_w, 1e-3) << "step " << step;
        for (float x : b) ASSERT_NEAR(x, want_b, 1e-3);
      }
    }
  });
}

// A training loop's exchange under uneven timing: the tensors of a small
// CNN (kernels and biases, from 10 to 1.2 M floats) added in backward
// order with random pauses that differ per rank, step after step. Every
// rank must get exactly the average every step, whichever way each tensor
// travels (inside the negotiation or through a collective, cached or not).
TEST(GradientReducerStressTest, UnevenTimingEveryStepExact) {
  const std::vector<std::pair<std::string, size_t>> tensors = {
      {"dense2/kernel", 1280},   {"dense2/bias", 10},
      {"dense1/kernel", 147456}, {"dense1/bias", 128},
      {"conv2/kernel", 18432},   {"conv2/bias", 64},
      {"conv1/kernel", 288},     {"conv1/bias", 32}};
  constexpr int kSteps = 150;
  hvd::runtime::RunRanks(2, [&](Context& ctx, int rank) {
    GradientReducer reducer(&ctx.engine(), {});
    std::mt19937 gen(1234 + rank);
    std::uniform_int_distribution<int> pause_us(0, 400);
    std::vector<std::vector<float>> bufs(tensors.size());
    for (int step = 0; step < kSteps; ++step) {
      for (size_t t = 0; t < tensors.size(); ++t) {
        // Small integers: the average of two is exact in float.
        bufs[t].resize(tensors[t].second);
        for (size_t i = 0; i < bufs[t].size(); ++i) {
          bufs[t][i] = static_cast<float>((rank + 1) * ((step + t) % 5 + 1) +
                                          static_cast<int>(i % 3));
        }
        int us = pause_us(gen);
        if (us > 380) us *= 8;  // now and then a rank lags by milliseconds
        std::this_thread::sleep_for(std::chrono::microseconds(us));
        ASSERT_TRUE(
            reducer.Add(tensors[t].first, bufs[t].data(), bufs[t].size()).ok());
      }
      auto stepped = reducer.EndPass();
      ASSERT_TRUE(stepped.ok()) << stepped.status().ToString();
      for (size_t t = 0; t < tensors.size(); ++t) {
        for (size_t i = 0; i < bufs[t].size(); ++i) {
          const float want = (3.0f * static_cast<float>((step + t) % 5 + 1) +
                              2.0f * static_cast<float>(i % 3)) /
                             2.0f;
          ASSERT_EQ(bufs[t][i], want)
              << "rank " << rank << " step " << step << " " << tensors[t].first
              << "[" << i << "]";
        }
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(
    PassesAndCompression, GradientReducerTest,
    ::testing::Values(GradCase{1, 1, Compression::kNone, false},
                      GradCase{2, 1, Compression::kNone, false},
                      GradCase{2, 2, Compression::kNone, false},
                      GradCase{3, 3, Compression::kFP16, false},
                      GradCase{2, 4, Compression::kNone, true},
                      GradCase{4, 2, Compression::kFP16, true}));

}  // namespace
}  // namespace hvd::runtime
