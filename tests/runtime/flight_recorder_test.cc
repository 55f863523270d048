// The flight recorder: a bounded ring of this rank's last collectives and
// their phases, and the engine's entries in it (the fast lane's, the full
// negotiation's, a mismatch's failure).
#include "runtime/engine/flight_recorder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/context.h"
#include "runtime/engine/engine.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

using Clock = FlightRecorder::Clock;
using Phase = FlightRecorder::Phase;

TEST(FlightRecorderTest, OffRecordsNothing) {
  FlightRecorder off(0, 0);
  EXPECT_EQ(off.Submitted(AllreduceRequest("a", 1), Clock::now()), 0u);
  off.Ran(1, Clock::now(), Clock::now());
  EXPECT_TRUE(off.Snapshot().empty());
}

TEST(FlightRecorderTest, KeepsTheLastEntriesWithTheirPhases) {
  FlightRecorder rec(3, 0);
  const Clock::time_point t0 = Clock::now();
  auto at = [&](int ms) { return t0 + std::chrono::milliseconds(ms); };
  std::vector<uint64_t> seqs;
  for (int i = 0; i < 5; ++i) {
    seqs.push_back(
        rec.Submitted(AllreduceRequest("t" + std::to_string(i), 4), at(i)));
  }
  EXPECT_EQ(seqs, (std::vector<uint64_t>{1, 2, 3, 4, 5}));
  rec.Mark(seqs[3], Phase::kNegotiated, at(10));
  rec.Mark(seqs[3], Phase::kStarted, at(11));
  rec.Finished(seqs[3], at(12), true);
  rec.Finished(seqs[4], at(13), false);
  // Entry 1 left the ring: marking it changes no other entry.
  rec.Finished(seqs[0], at(14), true);
  const std::vector<FlightRecorder::Entry> got = rec.Snapshot();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].seq, 3u);
  EXPECT_EQ(got[0].name, "t2");
  EXPECT_EQ(got[0].finished, Clock::time_point{});
  EXPECT_EQ(got[1].name, "t3");
  EXPECT_EQ(got[1].bytes, 16);
  EXPECT_EQ(got[1].submitted, at(3));
  EXPECT_EQ(got[1].negotiated, at(10));
  EXPECT_EQ(got[1].started, at(11));
  EXPECT_EQ(got[1].finished, at(12));
  EXPECT_FALSE(got[1].failed);
  EXPECT_EQ(got[2].name, "t4");
  EXPECT_EQ(got[2].negotiated, Clock::time_point{});
  EXPECT_TRUE(got[2].failed);
}

// A slot reused by another collective holds that one's name and this
// thread's site as it is now (a name of the same length, one longer, one
// shorter; a site set, then cleared).
TEST(FlightRecorderTest, AReusedSlotHoldsItsNewNameAndSite) {
  FlightRecorder rec(2, 0);
  const std::vector<std::string> names = {"grad.1", "grad.2",  "grad.1",
                                          "g",      "grad.10", "grad.2"};
  const std::vector<std::string> sites = {"", "train.py:10", "train.py:10",
                                          "", "x.py:7",      ""};
  for (size_t i = 0; i < names.size(); ++i) {
    FlightRecorder::SetThreadSite(sites[i]);
    if (i % 2 == 0) {
      rec.Submitted(AllreduceRequest(names[i], 4), Clock::now());
    } else {
      rec.Completed(AllreduceRequest(names[i], 4), Clock::now(), Clock::now());
    }
    const std::vector<FlightRecorder::Entry> last = rec.Snapshot(1);
    ASSERT_EQ(last.size(), 1u);
    EXPECT_EQ(last[0].name, names[i]) << i;
    EXPECT_EQ(last[0].site, sites[i]) << i;
  }
  FlightRecorder::SetThreadSite("");
}

TEST(FlightRecorderTest, DumpsJsonWithNullForPhasesNotReached) {
  FlightRecorder rec(4, 2);
  // Times in the past: the dump, made now, comes after the entry finished
  // however fast this runs.
  const Clock::time_point t = Clock::now() - std::chrono::microseconds(5);
  rec.Ran(rec.Submitted(AllreduceRequest("grad/fc2.weight", 8), t), t,
          t + std::chrono::microseconds(5));
  rec.Submitted(AllreduceRequest("loss\xff", 1),
                t);  // not UTF-8: replaced, kept
  auto dump = nlohmann::json::parse(rec.ToJson(3, "b"));
  EXPECT_EQ(dump["rank"], 3);
  EXPECT_EQ(dump["host"], "b");
  EXPECT_GE(dump["dumped_us"].get<int64_t>(),
            dump["entries"][0]["finished_us"].get<int64_t>());
  EXPECT_EQ(dump["process_set"], 2);
  ASSERT_EQ(dump["entries"].size(), 2u);
  const auto& ran = dump["entries"][0];
  EXPECT_EQ(ran["name"], "grad/fc2.weight");
  EXPECT_EQ(ran["op"], "allreduce");
  EXPECT_EQ(ran["dtype"], "float32");
  EXPECT_EQ(ran["bytes"], 32);
  EXPECT_EQ(
      ran["finished_us"].get<int64_t>() - ran["submitted_us"].get<int64_t>(),
      5);
  const auto& waiting = dump["entries"][1];
  EXPECT_EQ(waiting["seq"], 2);
  EXPECT_TRUE(waiting["negotiated_us"].is_null());
  EXPECT_TRUE(waiting["finished_us"].is_null());
  EXPECT_FALSE(waiting["submitted_us"].is_null());
}

// What the engine records: every collective, through the fast lane or the
// full negotiation, with its phases in order; a mismatch as failed.
TEST(FlightRecorderTest, TheEngineRecordsEachCollectiveAndItsEnd) {
  RunRanks(2, [](Context& ctx, int rank) {
    Engine& engine = ctx.engine();
    std::vector<float> x(5, 1.0f);
    for (int step = 0; step < 4; ++step) {
      ASSERT_TRUE(
          engine.AllreduceNow(AllreduceRequest("small", 5), x.data()).ok());
    }
    std::vector<float> big(100000, 1.0f);
    ASSERT_TRUE(engine.Enqueue(AllreduceRequest("big", 100000), big.data())
                    ->Wait()
                    .ok());
    // Rank 1 names it with another size: both fail, as negotiated.
    EXPECT_FALSE(
        engine.Enqueue(AllreduceRequest("odd", rank == 0 ? 5 : 4), x.data())
            ->Wait()
            .ok());
    const auto entries = engine.flight_recorder().Snapshot();
    ASSERT_EQ(entries.size(), 6u) << "rank " << rank;
    for (size_t i = 0; i < entries.size(); ++i) {
      const auto& e = entries[i];
      EXPECT_EQ(e.seq, i + 1);
      EXPECT_NE(e.finished, Clock::time_point{}) << e.name;
      EXPECT_LE(e.submitted, e.negotiated) << e.name;
      EXPECT_LE(e.negotiated, e.finished) << e.name;
    }
    EXPECT_EQ(entries[0].name, "small");
    EXPECT_EQ(entries[4].name, "big");
    EXPECT_EQ(entries[4].bytes, 400000);
    EXPECT_LE(entries[4].negotiated, entries[4].started);
    EXPECT_LE(entries[4].started, entries[4].finished);
    EXPECT_FALSE(entries[4].failed);
    EXPECT_EQ(entries[5].name, "odd");
    EXPECT_TRUE(entries[5].failed);
  });
}

// A rank whose fast-lane call waits for a late peer shows it in its
// record while it waits (a dump of a stuck job names it); rank 1 calls
// only once it sees rank 0's unfinished entry. The entry then finishes.
TEST(FlightRecorderTest, AFastLaneCallThatWaitsIsRecordedWhileItWaits) {
  std::atomic<Engine*> first{nullptr};
  RunRanks(2, [&](Context& ctx, int rank) {
    Engine& engine = ctx.engine();
    std::vector<float> x(5, 1.0f);
    // Cached after the first: the fast lane's from then on.
    for (int step = 0; step < 3; ++step) {
      ASSERT_TRUE(
          engine.AllreduceNow(AllreduceRequest("late", 5), x.data()).ok());
    }
    auto waiting = [](const Engine& e) {
      for (const auto& entry : e.flight_recorder().Snapshot()) {
        if (entry.name == "late" && entry.finished == Clock::time_point{}) {
          return true;
        }
      }
      return false;
    };
    if (rank == 0) {
      first = &engine;
    } else {
      const auto deadline = Clock::now() + std::chrono::seconds(30);
      while ((first.load() == nullptr || !waiting(*first.load())) &&
             Clock::now() < deadline) {
        std::this_thread::yield();
      }
      ASSERT_TRUE(waiting(*first.load())) << "rank 0's wait is not recorded";
    }
    ASSERT_TRUE(
        engine.AllreduceNow(AllreduceRequest("late", 5), x.data()).ok());
    EXPECT_EQ(x, std::vector<float>(5, 16.0f));
    const auto entries = engine.flight_recorder().Snapshot();
    ASSERT_EQ(entries.size(), 4u);
    EXPECT_FALSE(waiting(engine));
    EXPECT_LE(entries.back().submitted, entries.back().finished);
  });
}

}  // namespace
}  // namespace hvd::runtime
