// The negotiator and the fusion planner alone: tables of what ranks offer
// and what every rank must then decide, with no threads or sockets.
#include "runtime/engine/negotiator.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime/engine/fusion.h"
#include "runtime/engine/message.h"

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

Request Tensor(const std::string& name, OpType type = OpType::kAllreduce,
               DataType dtype = DataType::kFloat32, int64_t rows = 4) {
  Request r;
  r.name = name;
  r.type = type;
  r.dtype = dtype;
  r.count = rows;
  r.shape = {rows};
  return r;
}

Request Join() {
  Request r;
  r.name = kJoinName;
  r.type = OpType::kJoin;
  return r;
}

std::vector<std::string> Names(const Negotiation& n) {
  std::vector<std::string> out;
  for (const Agreed& a : n.ready) out.push_back(a.name);
  return out;
}

// Offers in full (no cache bits), one list per rank.
std::vector<RankOffer> Offers(std::vector<std::vector<Request>> per_rank) {
  std::vector<RankOffer> out(per_rank.size());
  for (size_t r = 0; r < per_rank.size(); ++r) {
    out[r].requests = std::move(per_rank[r]);
  }
  return out;
}

struct RoundCase {
  std::string what;
  int size;
  // Each round: what every rank offers; and the names ready after it.
  std::vector<std::vector<std::vector<Request>>> rounds;
  std::vector<std::vector<std::string>> ready;
};

TEST(NegotiatorTest, ReadyWhenEveryRankHasNamedItInAnyOrder) {
  const Request a = Tensor("a"), b = Tensor("b"), c = Tensor("c");
  const std::vector<RoundCase> cases = {
      {"all at once", 2, {{{a}, {a}}}, {{"a"}}},
      {"one rank late", 3, {{{a}, {a}, {}}, {{}, {}, {a}}}, {{}, {"a"}}},
      // Completion order is the order of the completing requests, rank
      // by rank: every rank computes the same list.
      {"different orders", 2, {{{a, b}, {b, a}}}, {{"b", "a"}}},
      {"over several rounds",
       2,
       {{{a, b, c}, {c}}, {{}, {b}}, {{}, {a}}},
       {{"c"}, {"b"}, {"a"}}},
      {"a rank of one", 1, {{{a, b}}}, {{"a", "b"}}},
  };
  for (const RoundCase& c : cases) {
    SCOPED_TRACE(c.what);
    Negotiator neg(c.size);
    ResponseCache cache(16);
    for (size_t i = 0; i < c.rounds.size(); ++i) {
      auto round = neg.Round(Offers(c.rounds[i]), cache, SteadyTime());
      ASSERT_TRUE(round.ok()) << round.status().ToString();
      EXPECT_EQ(Names(*round), c.ready[i]) << "round " << i;
      for (const Agreed& agreed : round->ready) {
        EXPECT_TRUE(agreed.mismatch.empty()) << agreed.mismatch;
      }
    }
  }
}

TEST(NegotiatorTest, MismatchesNameBothRanksLowerFirst) {
  struct Case {
    std::string what;
    Request low, high;  // what rank 0 and rank 1 ask for
    std::string says;   // "" when they agree
  };
  Request avg = Tensor("t");
  avg.average = true;
  Request scaled = Tensor("t");
  scaled.prescale = 2.0;
  Request gather_a = Tensor("t", OpType::kAllgather, DataType::kFloat32, 3);
  gather_a.shape = {3, 5};
  Request gather_b = gather_a;
  gather_b.count = 7;
  gather_b.shape = {7, 5};
  Request gather_c = gather_a;
  gather_c.shape = {3, 6};
  Request bcast0 = Tensor("t", OpType::kBroadcast), bcast1 = bcast0;
  bcast1.root = 1;
  const std::vector<Case> cases = {
      {"same", Tensor("t"), Tensor("t"), ""},
      {"dtype", Tensor("t"),
       Tensor("t", OpType::kAllreduce, DataType::kFloat64),
       "rank 0 asks for sum allreduce of float32 shape [4] but rank 1 for sum "
       "allreduce of float64 shape [4]"},
      {"op", Tensor("t"), avg,
       "rank 0 asks for sum allreduce of float32 shape [4] but rank 1 for "
       "average allreduce of float32 shape [4]"},
      {"shape", Tensor("t"),
       Tensor("t", OpType::kAllreduce, DataType::kFloat32, 5),
       "rank 0 asks for sum allreduce of float32 shape [4] but rank 1 for sum "
       "allreduce of float32 shape [5]"},
      {"scale", Tensor("t"), scaled,
       "rank 0 asks for sum allreduce of float32 shape [4] but rank 1 for sum "
       "allreduce of float32 shape [4] (prescale 2.000000, postscale "
       "1.000000)"},
      {"allgather rows may differ", gather_a, gather_b, ""},
      {"allgather columns may not", gather_a, gather_c,
       "rank 0 asks for allgather of float32 shape [3x5] but rank 1 for "
       "allgather of float32 shape [3x6]"},
      {"root", bcast0, bcast1,
       "rank 0 asks for broadcast from root 0 of float32 shape [4] but rank 1 "
       "for broadcast from root 1 of float32 shape [4]"},
      {"op type", Tensor("t"), Tensor("t", OpType::kBroadcast),
       "rank 0 asks for sum allreduce of float32 shape [4] but rank 1 for "
       "broadcast from root 0 of float32 shape [4]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    // Both arrival orders read the same.
    for (bool high_first : {false, true}) {
      Negotiator neg(2);
      ResponseCache cache(16);
      Negotiation round;
      if (high_first) {
        ASSERT_TRUE(neg.Round(Offers({{}, {c.high}}), cache, {}).ok());
        round = *neg.Round(Offers({{c.low}, {}}), cache, {});
      } else {
        round = *neg.Round(Offers({{c.low}, {c.high}}), cache, {});
      }
      ASSERT_EQ(round.ready.size(), 1u);
      EXPECT_EQ(round.ready[0].mismatch, c.says);
    }
  }
}

TEST(NegotiatorTest, AllgatherCountsAndAlltoallSplitsByRank) {
  Negotiator neg(3);
  ResponseCache cache(16);
  std::vector<Request> gathers(3), alltoalls(3);
  for (int r = 0; r < 3; ++r) {
    gathers[r] = Tensor("g", OpType::kAllgather, DataType::kInt32, r + 1);
    alltoalls[r] = Tensor("x", OpType::kAlltoall, DataType::kInt32, 3);
    alltoalls[r].splits = {r, 3 - r, 0};
  }
  auto round = neg.Round(Offers({{gathers[0], alltoalls[0]},
                                 {gathers[1], alltoalls[1]},
                                 {gathers[2], alltoalls[2]}}),
                         cache, {});
  ASSERT_TRUE(round.ok());
  ASSERT_EQ(Names(*round), (std::vector<std::string>{"g", "x"}));
  EXPECT_EQ(round->ready[0].counts, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(round->ready[1].splits, (std::vector<std::vector<int64_t>>{
                                        {0, 3, 0}, {1, 2, 0}, {2, 1, 0}}));
  // Splits for the wrong number of ranks are a mismatch.
  Request bad = alltoalls[0];
  bad.name = "y";
  bad.splits = {1, 2};
  Request good = bad;
  good.splits = {1, 1, 1};
  round = neg.Round(Offers({{good}, {bad}, {good}}), cache, {});
  ASSERT_EQ(round->ready.size(), 1u);
  EXPECT_EQ(round->ready[0].mismatch,
            "rank 1 gives 2 alltoall splits for 3 ranks");
}

TEST(NegotiatorTest, JoinedRanksCompleteWhatTheyNeverNamed) {
  Negotiator neg(3);
  ResponseCache cache(16);
  // Rank 2 names "a" and has nothing more; ranks 0 and 1 go on.
  auto round =
      neg.Round(Offers({{Tensor("b")}, {}, {Tensor("a"), Join()}}), cache, {});
  ASSERT_TRUE(round.ok());
  EXPECT_TRUE(round->joins);
  EXPECT_EQ(Names(*round), std::vector<std::string>{});
  EXPECT_EQ(neg.joined(), (std::vector<bool>{false, false, true}));
  // Rank 1 names "b": with rank 2 joined, every rank has.
  round = neg.Round(Offers({{}, {Tensor("b")}, {}}), cache, {});
  EXPECT_EQ(Names(*round), std::vector<std::string>{"b"});
  // Rank 0 joins: "a" (named by rank 2 only) completes too.
  round = neg.Round(Offers({{Join()}, {Tensor("a")}, {}}), cache, {});
  EXPECT_EQ(Names(*round), std::vector<std::string>{"a"});
  EXPECT_FALSE(neg.AllJoined());
  round = neg.Round(Offers({{}, {Join()}, {}}), cache, {});
  EXPECT_TRUE(neg.AllJoined());
  EXPECT_EQ(neg.last_joined(), 1);
  neg.ResetJoins();
  EXPECT_FALSE(neg.AllJoined());
}

TEST(NegotiatorTest, CachedTensorsByTheirBits) {
  Negotiator neg(2, /*record_events=*/true);
  ResponseCache cache(16);
  const Request a = Tensor("a");
  ASSERT_FALSE(cache.Put(a).has_value());
  const uint32_t id = *cache.Lookup(a);
  std::string bits(id / 8 + 1, '\0');
  bits[id / 8] = static_cast<char>(1 << (id % 8));
  std::vector<RankOffer> offers(2);
  offers[0].cache_bits = bits;
  auto round = neg.Round(offers, cache, SteadyTime(seconds(1)));
  ASSERT_TRUE(round.ok());
  EXPECT_TRUE(round->ready.empty());
  // Rank 1 has not named it for a minute: the stall report says so.
  bool past = false;
  EXPECT_EQ(neg.StallReport(SteadyTime(seconds(61)), seconds(60), seconds(0),
                            cache, &past),
            "'a' (missing ranks: 1)");
  EXPECT_FALSE(past);
  offers[1].cache_bits = bits;
  round = neg.Round(offers, cache, SteadyTime(seconds(62)));
  ASSERT_EQ(Names(*round), std::vector<std::string>{"a"});
  EXPECT_EQ(round->ready[0].meta, a);
  EXPECT_EQ(round->events,
            (std::vector<NegotiationEvent>{
                {NegotiationEvent::kStart, "a", OpType::kAllreduce, -1},
                {NegotiationEvent::kEnd, "a", OpType::kAllreduce, -1}}));
  EXPECT_EQ(neg.StallReport(SteadyTime(seconds(200)), seconds(60), seconds(0),
                            cache, &past),
            "");
  // A bit for an id this rank's cache does not hold: the caches diverged.
  std::string unknown(2, '\0');
  unknown[1] = 1;
  offers[0].cache_bits = unknown;
  offers[1].cache_bits = "";
  EXPECT_EQ(neg.Round(offers, cache, {}).status().code(),
            StatusCode::kDataLoss);
}

TEST(NegotiatorTest, AFullRequestForACachedNameDropsTheEntry) {
  Negotiator neg(2);
  ResponseCache cache(16);
  ASSERT_FALSE(cache.Put(Tensor("a")).has_value());
  const uint32_t id = *cache.Lookup(Tensor("a"));
  Request changed = Tensor("a", OpType::kAllreduce, DataType::kFloat32, 8);
  auto round = neg.Round(Offers({{changed}, {}}), cache, {});
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(round->dropped,
            (std::vector<std::pair<uint32_t, std::string>>{{id, "a"}}));
  EXPECT_FALSE(cache.Has(id));
}

TEST(NegotiatorTest, StallReportNamesMissingRanksAndTheShutdown) {
  Negotiator neg(4);
  ResponseCache cache(16);
  ASSERT_TRUE(neg.Round(Offers({{Tensor("a")}, {}, {Tensor("a")}, {}}), cache,
                        SteadyTime(seconds(0)))
                  .ok());
  ASSERT_TRUE(neg.Round(Offers({{Tensor("b")}, {Tensor("b")}, {}, {}}), cache,
                        SteadyTime(seconds(50)))
                  .ok());
  bool past = false;
  EXPECT_EQ(neg.StallReport(SteadyTime(seconds(30)), seconds(60), seconds(0),
                            cache, &past),
            "");
  EXPECT_EQ(neg.StallReport(SteadyTime(seconds(70)), seconds(60), seconds(100),
                            cache, &past),
            "'a' (missing ranks: 1, 3)");
  EXPECT_FALSE(past);
  EXPECT_EQ(neg.StallReport(SteadyTime(seconds(120)), seconds(60), seconds(100),
                            cache, &past),
            "'a' (missing ranks: 1, 3); 'b' (missing ranks: 2, 3)");
  EXPECT_TRUE(past);
}

TEST(FusionPlannerTest,
     GroupsConsecutiveCompatibleAllreducesUnderTheThreshold) {
  Request f4 = Tensor("f", OpType::kAllreduce, DataType::kFloat32, 4);  // 16 B
  Request f8 = Tensor("g", OpType::kAllreduce, DataType::kFloat32, 8);  // 32 B
  Request d4 = Tensor("d", OpType::kAllreduce, DataType::kFloat64, 4);
  Request avg = f4;
  avg.average = true;
  Request gpu = f4;
  gpu.device = 0;
  Request bcast = Tensor("b", OpType::kBroadcast);
  struct Case {
    std::string what;
    std::vector<const Request*> ready;
    size_t threshold;
    std::vector<FusionGroup> groups;
  };
  const std::vector<Case> cases = {
      {"empty", {}, 64, {}},
      {"all fit", {&f4, &f4, &f8}, 64, {{0, 3}}},
      {"exactly the threshold", {&f8, &f8}, 64, {{0, 2}}},
      {"split when full", {&f8, &f8, &f4}, 64, {{0, 2}, {2, 3}}},
      {"larger than the threshold runs alone",
       {&f4, &f8, &f4},
       20,
       {{0, 1}, {1, 2}, {2, 3}}},
      {"threshold 0: nothing fused", {&f4, &f4}, 0, {{0, 1}, {1, 2}}},
      {"dtype splits", {&f4, &d4, &d4, &f4}, 1024, {{0, 1}, {1, 3}, {3, 4}}},
      {"op splits", {&f4, &avg, &avg}, 1024, {{0, 1}, {1, 3}}},
      {"device tensors alone",
       {&gpu, &gpu, &f4},
       1024,
       {{0, 1}, {1, 2}, {2, 3}}},
      {"other ops alone, never reordered",
       {&f4, &bcast, &f4, &f4},
       1024,
       {{0, 1}, {1, 2}, {2, 4}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(PlanFusion(c.ready, c.threshold), c.groups);
  }
}

// HOROVOD_DISABLE_GROUP_FUSION: a grouped allreduce's tensors fuse only
// with each other, and tensors of no group only among themselves.
TEST(FusionPlannerTest, GroupsFuseApartWhenAsked) {
  Request g1 = Tensor("g1.0"), g2 = Tensor("g2.0"), lone = Tensor("x");
  g1.group = "g1";
  g2.group = "g2";
  const std::vector<const Request*> ready = {&g1, &g1, &g2, &lone, &lone};
  EXPECT_EQ(PlanFusion(ready, 1024, /*by_group=*/true),
            (std::vector<FusionGroup>{{0, 2}, {2, 3}, {3, 5}}));
  EXPECT_EQ(PlanFusion(ready, 1024), (std::vector<FusionGroup>{{0, 5}}));
}

// Rank 0's autotuned values reach every rank as they were: each on/off
// choice alone, off, survives the trip.
TEST(CycleMessageTest, KnobsTravelWhole) {
  for (int off = -1; off < 6; ++off) {
    Knobs k;
    k.fusion_bytes = 12345678;
    k.cycle_time = std::chrono::microseconds(2500);
    bool Knobs::*flags[] = {&Knobs::cache,
                            &Knobs::hierarchical_allreduce,
                            &Knobs::hierarchical_allgather,
                            &Knobs::shm,
                            &Knobs::single_copy,
                            &Knobs::several_streams};
    if (off >= 0) k.*flags[off] = false;
    std::string msg;
    PutValue<uint8_t>(msg, 0);
    PutBytes(msg, "");
    PutBytes(msg, "");
    PutValue<uint32_t>(msg, 0);
    PutKnobs(msg, k);
    CycleMessage m;
    ASSERT_TRUE(ParseCycleMessage(msg, &m));
    ASSERT_TRUE(m.knobs.has_value());
    EXPECT_EQ(*m.knobs, k) << off;
  }
}

}  // namespace
}  // namespace hvd::runtime
