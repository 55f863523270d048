// Process sets as contexts of their own: ranks as threads on two named
// hosts (a: ranks 0-1, b: ranks 2-3), each set negotiated and connected
// among its members only, beside the job's engine.
#include <gtest/gtest.h>

#include <map>
#include <thread>
#include <vector>

#include "runtime/context.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

struct SetCase {
  int id;
  std::vector<int> ranks;
};

// {0, 2}: one rank per host (TCP); {1, 2, 3}: hosts a and b unevenly;
// {2, 3}: host b alone (shared memory).
const std::vector<SetCase> kSets = {{1, {0, 2}}, {2, {1, 2, 3}}, {3, {2, 3}}};

void RunTwoHosts(const std::function<void(Context&, int)>& body) {
  TestJob job({{"a", 2, 0}, {"b", 2, 0}});
  ASSERT_TRUE(job.ok());
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      auto ctx = Context::Create(job.Config(r));
      ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
      body(**ctx, r);
    });
  }
  for (auto& t : threads) t.join();
}

float SumOf(const std::vector<int>& ranks) {
  float s = 0;
  for (int r : ranks) s += static_cast<float>(r + 1);
  return s;
}

TEST(ProcessSetTest, EachSetHasItsOwnRanksTransportsAndEngine) {
  RunTwoHosts([](Context& job, int rank) {
    std::map<int, std::unique_ptr<Context>> mine;
    for (const SetCase& set : kSets) {
      bool member = false;
      for (int r : set.ranks) member |= r == rank;
      if (!member) {
        EXPECT_EQ(job.CreateProcessSet(set.id, set.ranks).status().code(),
                  StatusCode::kInvalidArgument);
        continue;
      }
      auto ctx = job.CreateProcessSet(set.id, set.ranks);
      ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
      mine[set.id] = std::move(*ctx);
    }
    // Places within each set.
    if (rank == 2) {
      const auto& s1 = mine.at(1)->assignment();
      EXPECT_EQ(s1.rank, 1);
      EXPECT_EQ(s1.size, 2);
      EXPECT_EQ(s1.local_size, 1);
      EXPECT_EQ(s1.cross_rank, 1);
      EXPECT_EQ(s1.cross_size, 2);
      const auto& s2 = mine.at(2)->assignment();
      EXPECT_EQ(s2.rank, 1);
      EXPECT_EQ(s2.local_rank, 0);
      EXPECT_EQ(s2.local_size, 2);
      EXPECT_EQ(s2.cross_rank, 1);
      EXPECT_EQ(s2.cross_size, 2);
      const auto& s3 = mine.at(3)->assignment();
      EXPECT_EQ(s3.rank, 0);
      EXPECT_EQ(s3.local_size, 2);
      EXPECT_EQ(s3.cross_size, 1);
    }
    if (rank == 3) {
      const auto& s2 = mine.at(2)->assignment();
      EXPECT_EQ(s2.rank, 2);
      EXPECT_EQ(s2.local_rank, 1);
      EXPECT_EQ(s2.cross_rank, 0);  // host a has no second member
      EXPECT_EQ(s2.cross_size, 1);
    }
    // Every set's allreduce, and the job's, in flight together: each sums
    // over its own members.
    std::map<int, std::vector<float>> data;
    std::vector<std::pair<int, std::shared_ptr<Completion>>> done;
    for (auto& [id, ctx] : mine) {
      data[id].assign(1000, static_cast<float>(rank + 1));
      Request r;
      r.name = "grad";  // the same name in every set: sets do not mix
      r.count = 1000;
      done.emplace_back(id, ctx->engine().Enqueue(r, data[id].data()));
    }
    std::vector<float> all(10, static_cast<float>(rank + 1));
    Request r;
    r.name = "grad";
    r.count = 10;
    auto job_done = job.engine().Enqueue(r, all.data());
    for (auto& [id, d] : done) {
      Status s = d->Wait();
      ASSERT_TRUE(s.ok()) << "set " << id << ": " << s.ToString();
      for (const SetCase& set : kSets) {
        if (set.id == id) {
          EXPECT_EQ(data[id][999], SumOf(set.ranks)) << "set " << id;
        }
      }
    }
    ASSERT_TRUE(job_done->Wait().ok());
    EXPECT_EQ(all[0], SumOf({0, 1, 2, 3}));
    // Allgather and broadcast within set 2 (ranks 1, 2, 3).
    if (mine.count(2)) {
      Context& s2 = *mine.at(2);
      int32_t me = rank;
      Output out;
      Request g;
      g.name = "who";
      g.type = OpType::kAllgather;
      g.dtype = DataType::kInt32;
      g.count = 1;
      ASSERT_TRUE(s2.engine().Enqueue(g, &me, &out)->Wait().ok());
      ASSERT_EQ(out.data.size(), 12u);
      const int32_t* got = reinterpret_cast<const int32_t*>(out.data.data());
      EXPECT_EQ(std::vector<int32_t>(got, got + 3),
                (std::vector<int32_t>{1, 2, 3}));
      float v = static_cast<float>(rank);
      Request b;
      b.name = "root";
      b.type = OpType::kBroadcast;
      b.count = 1;
      b.root = 2;  // the set's third member: rank 3
      ASSERT_TRUE(s2.engine().Enqueue(b, &v)->Wait().ok());
      EXPECT_EQ(v, 3.0f);
    }
  });
}

}  // namespace
}  // namespace hvd::runtime
