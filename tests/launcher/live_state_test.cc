// The live page's state (launcher/live_state.h): the job, each host's and
// rank's health now with out-of-range values named, and series over the
// job, whole or after a time.
#include "launcher/live_state.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hvd::launcher {
namespace {

using nlohmann::json;

HostHealth Host(const std::string& name, double step_s, double share,
                double cpu, int rank = -1) {
  HostHealth h;
  h.host = name;
  h.rank = rank;
  h.step_s = step_s;
  h.allreduce_share = share;
  h.cpu_share = cpu;
  h.memory_share = 0.5;
  return h;
}

// A row's figure by its column's name.
json At(const json& state, const json& row, const std::string& column) {
  const json& columns = state["columns"];
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == column) return row[i];
  }
  ADD_FAILURE() << "no column " << column;
  return nullptr;
}

// The names of a row's columns out of range.
std::vector<std::string> Bad(const json& state, const json& row) {
  const int mask = At(state, row, "bad").get<int>();
  std::vector<std::string> out;
  for (size_t i = 0; i < state["columns"].size(); ++i) {
    if (mask & (1 << i)) out.push_back(state["columns"][i]);
  }
  return out;
}

TEST(LiveStateTest, RowsNameWhatIsOutOfItsHealthyRange) {
  LiveHistory history;
  history.Add(1, {Host("a", 0.1, 0.1, 0.9), Host("b", 0.1, 0.35, 0.4)},
              {Host("b", 0.1, 0.3, -1, 2), Host("b", 0.1, 0.05, -1, 3)},
              "rank 3 (host b) last in 80 % of collectives", 3);
  const json s = json::parse(LiveStateJson(
      {"j1", {"python3", "train.py"}, {"a:2", "b:2"}, 4}, 12.5, history));
  EXPECT_EQ(s["job"]["id"], "j1");
  EXPECT_EQ(s["job"]["size"], 4);
  EXPECT_EQ(s["job"]["hosts"], json({"a:2", "b:2"}));
  EXPECT_DOUBLE_EQ(s["run_s"].get<double>(), 12.5);
  ASSERT_EQ(s["hosts"].size(), 2u);
  EXPECT_EQ(At(s, s["hosts"][0], "host"), "a");
  EXPECT_TRUE(At(s, s["hosts"][0], "rank").is_null());
  EXPECT_TRUE(Bad(s, s["hosts"][0]).empty());
  EXPECT_EQ(Bad(s, s["hosts"][1]), (std::vector<std::string>{"ar", "cpu"}));
  EXPECT_DOUBLE_EQ(At(s, s["hosts"][1], "ar").get<double>(), 0.35);
  // Absent figures are null, and never marked.
  EXPECT_TRUE(At(s, s["hosts"][0], "gpu").is_null());
  EXPECT_EQ(s["stragglers"], "rank 3 (host b) last in 80 % of collectives");
  EXPECT_EQ(s["straggler"], 3);
  // Each rank's row (no CPU: a host's figure).
  ASSERT_EQ(s["ranks"].size(), 2u);
  EXPECT_EQ(At(s, s["ranks"][0], "rank"), 2);
  EXPECT_EQ(At(s, s["ranks"][0], "host"), "b");
  EXPECT_TRUE(At(s, s["ranks"][0], "cpu").is_null());
  EXPECT_EQ(Bad(s, s["ranks"][0]), (std::vector<std::string>{"ar"}));
  EXPECT_EQ(s["series"]["ranks"]["3"]["step"], json({0.1}));
  EXPECT_EQ(s["series"]["hosts"]["b"]["ar"], json({0.35}));
  // A later poll does not repeat the job's description.
  EXPECT_FALSE(json::parse(LiveStateJson({}, 13, history, 0)).contains("job"));
}

TEST(LiveStateTest, NewsCarriesLinesAndChangedMembers) {
  LiveHistory history;
  history.Add(1, {Host("a", 0.1, 0.1, 0.9)});
  LiveNews news;
  news.lines = {{7, "elastic: 2 workers on a:1,b:1 (reset 1)"}};
  news.members_changed = true;
  rendezvous::Member gone;
  gone.rank = 1;
  gone.host = "b";
  gone.generation = 2;
  gone.exit_status = 3;
  news.members = {{0, "a", 0, 2, std::nullopt}, gone};
  const json s = json::parse(LiveStateJson({}, 1, history, 0, news));
  const json lines = {{7, "elastic: 2 workers on a:1,b:1 (reset 1)"}};
  const json members = {{0, "a", 0, 2, nullptr}, {1, "b", 0, 2, 3}};
  EXPECT_EQ(s["lines"], lines);
  EXPECT_EQ(s["members"], members);
  // Nothing new: neither key.
  const json quiet = json::parse(LiveStateJson({}, 1, history, 0, {}));
  EXPECT_FALSE(quiet.contains("lines"));
  EXPECT_FALSE(quiet.contains("members"));
}

TEST(LiveStateTest, SeriesAlignHostsThatCameAndWent) {
  LiveHistory history;
  history.Add(1, {Host("a", 0.1, 0.1, 0.9)});
  history.Add(2, {Host("a", 0.2, 0.1, 0.9), Host("b", 0.3, 0.1, 0.9)});
  history.Add(3, {Host("b", 0.3, 0.2, 0.9)});
  const json s = json::parse(LiveStateJson({}, 3, history));
  EXPECT_EQ(s["series"]["t"], json({1.0, 2.0, 3.0}));
  EXPECT_EQ(s["series"]["hosts"]["a"]["ar"], json({0.1, 0.1, nullptr}));
  EXPECT_EQ(s["series"]["hosts"]["b"]["ar"], json({nullptr, 0.1, 0.2}));
  EXPECT_EQ(s["hosts"].size(), 1u);
}

TEST(LiveStateTest, SinceGivesOnlyTheNewerSamples) {
  LiveHistory history;
  for (int i = 1; i <= 5; ++i) history.Add(i, {Host("a", 0.1 * i, 0, 1)});
  const json s = json::parse(LiveStateJson({}, 5, history, 3));
  EXPECT_EQ(s["series"]["t"], json({4.0, 5.0}));
  EXPECT_EQ(s["series"]["hosts"]["a"]["ar"], json({0, 0}));
  // Rows are always the newest sample's.
  EXPECT_DOUBLE_EQ(At(s, s["hosts"][0], "step").get<double>(), 0.5);
  const json none = json::parse(LiveStateJson({}, 5, history, 5));
  EXPECT_TRUE(none["series"]["t"].empty());
  EXPECT_TRUE(none["series"]["hosts"].empty());
  // Times go out to the millisecond, and the one sent back is the
  // sample's own: it never comes again.
  LiveHistory fine;
  fine.Add(1.0004, {Host("a", 0.1, 0, 1)});
  fine.Add(1.0016, {Host("a", 0.1, 0, 1)});
  const json all = json::parse(LiveStateJson({}, 2, fine));
  EXPECT_EQ(all["series"]["t"], json({1.0, 1.002}));
  const double newest = all["series"]["t"][1].get<double>();
  EXPECT_TRUE(
      json::parse(LiveStateJson({}, 2, fine, newest))["series"]["t"].empty());
}

TEST(LiveStateTest, FiguresKeepFourDigits) {
  LiveHistory history;
  HostHealth h = Host("a", 0.123456, 0.987654, 0.5);
  h.bus_bytes_per_s = 1234567890;
  history.Add(1, {h});
  const json s = json::parse(LiveStateJson({}, 1, history));
  EXPECT_DOUBLE_EQ(At(s, s["hosts"][0], "step").get<double>(), 0.1235);
  EXPECT_DOUBLE_EQ(At(s, s["hosts"][0], "ar").get<double>(), 0.9877);
  EXPECT_DOUBLE_EQ(At(s, s["hosts"][0], "bus").get<double>(), 1.235e9);
}

// The page's goal: under 300 KB a minute at 16 ranks, a poll a second.
// 16 hosts of one rank (the most rows), every figure present and out of
// range, an hour of history, one new sample per poll.
TEST(LiveStateTest, APollAtSixteenRanksIsUnderFiveKilobytes) {
  LiveHistory history;
  auto full = [](int i, int rank) {
    HostHealth h;
    h.host = "10.213.0." + std::to_string(100 + i);
    h.rank = rank;
    h.step_s = 0.123456 + i;
    h.allreduce_share = 0.654321;
    h.bus_bytes_per_s = 1.23456e9;
    h.cpu_share = rank < 0 ? 0.123456 : -1;
    h.memory_share = 0.954321;
    h.gpu_share = 0.123456;
    h.gpu_memory_share = 0.954321;
    return h;
  };
  for (int t = 1; t <= 3600; ++t) {
    std::vector<HostHealth> hosts, ranks;
    for (int i = 0; i < 16; ++i) {
      hosts.push_back(full(i, -1));
      ranks.push_back(full(i, i));
    }
    history.Add(t, hosts, ranks,
                "rank 15 (host 10.213.0.115) arrived last in 92 % of 123456 "
                "collectives, 180.0 ms behind the median",
                15);
  }
  const LiveJob job{"0123456789abcdef",
                    {"python3", "/srv/job/pytorch_mnist.py", "--epochs", "90"},
                    std::vector<std::string>(16, "10.213.0.100:1"),
                    16};
  const std::string poll = LiveStateJson(job, 3600, history, 3599);
  EXPECT_LT(poll.size(), 5000u) << poll;
  EXPECT_EQ(json::parse(poll)["series"]["t"].size(), 1u);
}

TEST(LiveStateTest, HistoryKeepsTheNewestSamples) {
  LiveHistory history(3);
  for (int i = 0; i < 10; ++i) history.Add(i, {Host("a", i + 1, 0, 1)});
  ASSERT_EQ(history.size(), 3u);
  EXPECT_DOUBLE_EQ(history.samples().front().t_s, 7);
  const json s = json::parse(LiveStateJson({}, 10, history));
  EXPECT_EQ(s["series"]["t"], json({7.0, 8.0, 9.0}));
  // No samples yet: an empty page, not an error.
  const json empty = json::parse(LiveStateJson({}, 0, LiveHistory()));
  EXPECT_TRUE(empty["hosts"].empty());
  EXPECT_TRUE(empty["series"]["t"].empty());
}

}  // namespace
}  // namespace hvd::launcher
