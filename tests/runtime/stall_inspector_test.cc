// The stall inspector alone: when it asks what stalled, what it says, and
// when it tells the engine to end the job. Its clock and report are handed
// in, so no engine runs and nothing waits.
#include "runtime/engine/stall_inspector.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

struct Asked {
  std::vector<std::string> warnings;
  int reports = 0;
};

StallOptions Options(Asked* asked, milliseconds warning,
                     milliseconds shutdown = milliseconds(0)) {
  StallOptions o;
  o.warning = warning;
  o.shutdown = shutdown;
  o.on_warning = [asked](const std::string& w) {
    asked->warnings.push_back(w);
  };
  return o;
}

TEST(StallInspectorTest, AsksOncePerWarningPeriodAndNamesWhatStalled) {
  Asked asked;
  const auto t0 = std::chrono::steady_clock::time_point{};
  StallInspector inspector(Options(&asked, seconds(60)), t0);
  auto report = [&](auto, bool* past) {
    ++asked.reports;
    *past = false;
    return std::string("grad.w (missing ranks 1, 3)");
  };
  EXPECT_FALSE(inspector.Inspect(t0 + seconds(59), report));
  EXPECT_EQ(asked.reports, 0);  // not due yet
  EXPECT_FALSE(inspector.Inspect(t0 + seconds(60), report));
  EXPECT_EQ(asked.reports, 1);
  ASSERT_EQ(asked.warnings.size(), 1u);
  EXPECT_EQ(asked.warnings[0],
            "stalled tensors: some ranks submitted them and others did not "
            "for 60 s: grad.w (missing ranks 1, 3). Every rank must submit "
            "the same tensors (in any order).");
  EXPECT_FALSE(inspector.Inspect(t0 + seconds(90), report));
  EXPECT_EQ(asked.reports, 1);  // the next period starts at the last check
  EXPECT_FALSE(inspector.Inspect(t0 + seconds(120), report));
  EXPECT_EQ(asked.reports, 2);
}

TEST(StallInspectorTest, NothingStalledSaysNothing) {
  Asked asked;
  const auto t0 = std::chrono::steady_clock::time_point{};
  StallInspector inspector(Options(&asked, seconds(1)), t0);
  EXPECT_FALSE(inspector.Inspect(t0 + seconds(5), [&](auto, bool*) {
    ++asked.reports;
    return std::string();
  }));
  EXPECT_EQ(asked.reports, 1);
  EXPECT_TRUE(asked.warnings.empty());
}

TEST(StallInspectorTest, AShorterShutdownTimeChecksSoonerAndEndsTheJob) {
  Asked asked;
  const auto t0 = std::chrono::steady_clock::time_point{};
  StallInspector inspector(Options(&asked, seconds(60), seconds(10)), t0);
  auto report = [&](auto now, bool* past) {
    *past = now - t0 >= seconds(20);
    return std::string("t");
  };
  EXPECT_FALSE(inspector.Inspect(t0 + seconds(10), report));
  EXPECT_TRUE(inspector.Inspect(t0 + seconds(20), report));
  EXPECT_EQ(asked.warnings.size(), 2u);
  EXPECT_EQ(inspector.ShutdownMessage("t (missing rank 2)"),
            "the job was stopped by the stall inspector after 10 s: t "
            "(missing rank 2) (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS)");
}

// The flight recorders are asked for on a stall's first warning (not on
// every warning while it lasts), again for a new stall after a clear
// check, and finally before the shutdown.
TEST(StallInspectorTest, AsksForTheFlightRecordersOnAStallsFirstWarning) {
  Asked asked;
  std::vector<std::pair<std::string, bool>> dumps;
  const auto t0 = std::chrono::steady_clock::time_point{};
  StallOptions o = Options(&asked, seconds(10), seconds(40));
  o.ask_dump = [&](const std::string& stalled, bool final) {
    dumps.push_back({stalled, final});
  };
  StallInspector inspector(o, t0);
  std::string now_stalled = "a (missing rank 1)";
  auto report = [&](auto now, bool* past) {
    *past = now - t0 >= seconds(60);
    return now_stalled;
  };
  EXPECT_FALSE(inspector.Inspect(t0 + seconds(10), report));
  EXPECT_FALSE(inspector.Inspect(t0 + seconds(20), report));
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(dumps[0], std::make_pair(now_stalled, false));
  now_stalled.clear();
  EXPECT_FALSE(inspector.Inspect(t0 + seconds(30), report));
  now_stalled = "b (missing rank 0)";
  EXPECT_FALSE(inspector.Inspect(t0 + seconds(40), report));
  EXPECT_FALSE(inspector.Inspect(t0 + seconds(50), report));
  EXPECT_TRUE(inspector.Inspect(t0 + seconds(60), report));
  ASSERT_EQ(dumps.size(), 3u);
  EXPECT_EQ(dumps[1], std::make_pair(now_stalled, false));
  EXPECT_EQ(dumps[2], std::make_pair(now_stalled, true));
}

TEST(StallInspectorTest, OffAsksNothing) {
  Asked asked;
  const auto t0 = std::chrono::steady_clock::time_point{};
  StallOptions o = Options(&asked, seconds(1));
  o.check = false;
  StallInspector inspector(o, t0);
  EXPECT_FALSE(inspector.Inspect(t0 + seconds(100), [&](auto, bool* past) {
    ++asked.reports;
    *past = true;
    return std::string("t");
  }));
  EXPECT_EQ(asked.reports, 0);
}

}  // namespace
}  // namespace hvd::runtime
