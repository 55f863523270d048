// The live page's state (launcher/live_state.h): the job, each host's
// health now with out-of-range values marked, and series over the job.
#include "launcher/live_state.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace hvd::launcher {
namespace {

using nlohmann::json;

HostHealth Host(const std::string& name, double step_s, double share,
                double cpu) {
  HostHealth h;
  h.host = name;
  h.step_s = step_s;
  h.allreduce_share = share;
  h.cpu_share = cpu;
  h.memory_share = 0.5;
  return h;
}

TEST(LiveStateTest, NowMarksWhatIsOutOfItsHealthyRange) {
  LiveHistory history;
  HostHealth r2 = Host("b", 0.1, 0.3, -1), r3 = Host("b", 0.1, 0.4, -1);
  r2.rank = 2;
  r3.rank = 3;
  history.Add(1, {Host("a", 0.1, 0.1, 0.9), Host("b", 0.1, 0.35, 0.4)},
              {r2, r3}, "rank 3 (host b) last in 80 % of collectives", 3);
  const json s = json::parse(LiveStateJson(
      {"j1", {"python3", "train.py"}, {"a:2", "b:2"}, 4}, 12.5, history));
  EXPECT_EQ(s["job"]["id"], "j1");
  EXPECT_EQ(s["job"]["size"], 4);
  EXPECT_EQ(s["job"]["hosts"], json({"a:2", "b:2"}));
  EXPECT_DOUBLE_EQ(s["job"]["run_s"].get<double>(), 12.5);
  ASSERT_EQ(s["now"].size(), 2u);
  EXPECT_EQ(s["now"][0]["host"], "a");
  EXPECT_FALSE(s["now"][0]["marks"]["allreduce_share"].get<bool>());
  EXPECT_FALSE(s["now"][0]["marks"]["cpu_share"].get<bool>());
  EXPECT_TRUE(s["now"][1]["marks"]["allreduce_share"].get<bool>());
  EXPECT_TRUE(s["now"][1]["marks"]["cpu_share"].get<bool>());
  // Absent figures are null, and never marked.
  EXPECT_TRUE(s["now"][0]["gpu_share"].is_null());
  EXPECT_FALSE(s["now"][0]["marks"]["gpu_share"].get<bool>());
  EXPECT_EQ(s["stragglers"], "rank 3 (host b) last in 80 % of collectives");
  // Each rank's row; the straggler's says so.
  ASSERT_EQ(s["ranks"].size(), 2u);
  EXPECT_EQ(s["ranks"][0]["rank"], 2);
  EXPECT_EQ(s["ranks"][0]["host"], "b");
  EXPECT_FALSE(s["ranks"][0]["straggler"].get<bool>());
  EXPECT_TRUE(s["ranks"][1]["straggler"].get<bool>());
  EXPECT_TRUE(s["ranks"][1]["marks"]["allreduce_share"].get<bool>());
  EXPECT_EQ(s["series"]["ranks"]["3"]["allreduce_share"], json({0.4}));
}

TEST(LiveStateTest, SeriesAlignHostsThatCameAndWent) {
  LiveHistory history;
  history.Add(1, {Host("a", 0.1, 0.1, 0.9)});
  history.Add(2, {Host("a", 0.2, 0.1, 0.9), Host("b", 0.3, 0.1, 0.9)});
  history.Add(3, {Host("b", -1, 0.1, 0.9)});
  const json s = json::parse(LiveStateJson({}, 3, history));
  EXPECT_EQ(s["series"]["t"], json({1.0, 2.0, 3.0}));
  const json& a = s["series"]["hosts"]["a"]["step_s"];
  const json& b = s["series"]["hosts"]["b"]["step_s"];
  EXPECT_EQ(a, json({0.1, 0.2, nullptr}));      // a left
  EXPECT_EQ(b, json({nullptr, 0.3, nullptr}));  // b came; no steps at 3
  EXPECT_EQ(s["now"].size(), 1u);
}

TEST(LiveStateTest, HistoryKeepsTheNewestSamples) {
  LiveHistory history(3);
  for (int i = 0; i < 10; ++i) history.Add(i, {Host("a", i, 0, 1)});
  ASSERT_EQ(history.size(), 3u);
  EXPECT_DOUBLE_EQ(history.samples().front().t_s, 7);
  const json s = json::parse(LiveStateJson({}, 10, history));
  EXPECT_EQ(s["series"]["t"], json({7.0, 8.0, 9.0}));
  // No samples yet: an empty page, not an error.
  const json empty = json::parse(LiveStateJson({}, 0, LiveHistory()));
  EXPECT_TRUE(empty["now"].empty());
  EXPECT_TRUE(empty["series"]["t"].empty());
}

}  // namespace
}  // namespace hvd::launcher
