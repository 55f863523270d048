// The autotuner's optimiser on functions whose optimum is known: it must
// get there within Horovod's default sample budget.
#include "runtime/bayes_opt.h"

#include <gtest/gtest.h>

#include <cmath>

#include "runtime/autotune.h"

namespace hvd::runtime {
namespace {

TEST(GaussianProcessTest, InterpolatesAndIsUnsureFarFromData) {
  GaussianProcess gp(0.2, 1e-3);
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (double v : {0.0, 0.25, 0.5, 0.75}) {
    x.push_back({v});
    y.push_back(std::sin(6 * v));
  }
  gp.Fit(x, y);
  for (size_t i = 0; i < x.size(); ++i) {
    auto [mu, sd] = gp.Predict(x[i]);
    EXPECT_NEAR(mu, y[i], 1e-2);
    EXPECT_LT(sd, 0.05);
  }
  EXPECT_GT(gp.Predict({1.0}).second, gp.Predict({0.5}).second * 5);
}

TEST(ExpectedImprovementTest, GrowsWithMeanAndUncertainty) {
  EXPECT_GT(ExpectedImprovement(1.0, 0.1, 0.5, 0),
            ExpectedImprovement(0.6, 0.1, 0.5, 0));
  EXPECT_GT(ExpectedImprovement(0.5, 1.0, 0.5, 0),
            ExpectedImprovement(0.5, 0.1, 0.5, 0));
  EXPECT_NEAR(ExpectedImprovement(0.2, 0.0, 0.5, 0), 0.0, 1e-12);
}

// Fusion threshold (MB) and cycle time (ms), as autotune searches them.
TEST(BayesianOptimizerTest, FindsTheOptimumOfKnownFunctionsWithinTheBudget) {
  auto score = [](const std::vector<double>& p) {
    double a = (p[0] - 20) / 64, b = (p[1] - 12) / 100;
    return 100 - 400 * (a * a + b * b);  // best: 100 at (20, 12)
  };
  for (uint64_t seed : {1, 2, 3}) {
    BayesianOptimizer opt({{0, 64}, {1, 100}}, 0.01, seed);
    for (int i = 0; i < 20; ++i) {  // Horovod's bayes_opt_max_samples
      std::vector<double> p = opt.Next();
      ASSERT_GE(p[0], 0);
      ASSERT_LE(p[1], 100);
      opt.AddSample(p, score(p));
    }
    auto [best, value] = opt.Best();
    EXPECT_GT(value, 97) << "seed " << seed << " best at " << best[0] << ", "
                         << best[1];
  }
  // With noisy scores it still lands near the top of a 1-D bump.
  std::mt19937 gen(5);
  std::normal_distribution<double> noise(0, 0.02);
  BayesianOptimizer opt({{0, 1}}, 0.2, 9);
  for (int i = 0; i < 20; ++i) {
    std::vector<double> p = opt.Next();
    opt.AddSample(p, std::exp(-50 * (p[0] - 0.7) * (p[0] - 0.7)) + noise(gen));
  }
  EXPECT_NEAR(opt.Best().first[0], 0.7, 0.08);
}

}  // namespace
}  // namespace hvd::runtime

namespace hvd::runtime {
namespace {

// The autotuner over a fake engine whose speed depends on the knobs: it
// warms up, samples, ends on the best, logs every sample, and leaves a
// value the user gave alone.
TEST(AutotunerTest, SamplesThenSettlesOnTheBestAndLogsIt) {
  auto speed = [](const Knobs& k) {  // bytes per second, best near (24, 5)
    double a = (k.fusion_mb() - 24) / 64, b = (k.cycle_ms() - 5) / 100;
    return 1e9 * (1.0 - a * a - b * b);
  };
  TuneOptions o;
  o.warmup_samples = 2;
  o.steps_per_sample = 4;
  o.max_samples = 20;
  o.noise = 0.01;
  Autotuner t(o, Knobs::AtSearchPoint(1, 50));
  Knobs k = Knobs::AtSearchPoint(1, 50);
  double now = 0;
  int switches = 0;
  while (!t.done()) {
    now += 1e6 / speed(k);  // a cycle of 1 MB at this speed
    if (auto next = t.Step(1000000, now)) {
      k = *next;
      ++switches;
      ASSERT_GE(k.fusion_mb(), 0);
      ASSERT_LE(k.fusion_mb(), 64);
      ASSERT_GE(k.cycle_ms(), 0);
      ASSERT_LE(k.cycle_ms(), 100);
    }
    ASSERT_LT(now, 1e6) << "never finished";
  }
  EXPECT_EQ(switches, 21);  // one per sample after the warm-up, one choice
  EXPECT_GT(speed(k), 0.97e9)
      << k.fusion_mb() << " MB, " << k.cycle_ms() << " ms";
  const auto& log = t.log();
  ASSERT_EQ(log.size(), 1u + 2 + 20 + 1 + 1);  // + the cache choice, best
  EXPECT_EQ(log[0],
            "sample,phase,fusion_threshold_mb,cycle_time_ms,response_cache,"
            "hierarchical_allreduce,hierarchical_allgather,shared_memory,"
            "single_copy,tcp_streams,tcp_wide_crossovers,bytes_per_second");
  EXPECT_NE(log[log.size() - 2].find(",choice,"), std::string::npos);
  EXPECT_TRUE(k.cache) << "turning the cache off did not help: kept on";
  EXPECT_NE(log[1].find(",warmup,"), std::string::npos);
  EXPECT_NE(log.back().find(",best,"), std::string::npos);

  TuneOptions pinned = o;
  pinned.fixed_fusion = true;
  Autotuner p(pinned, Knobs::AtSearchPoint(8, 50));
  now = 0;
  while (!p.done()) {
    now += 0.001;
    if (auto next = p.Step(1000, now)) {
      EXPECT_EQ(next->fusion_mb(), 8);
    }
  }
}

}  // namespace
}  // namespace hvd::runtime
