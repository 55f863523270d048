// The response cache: its LRU with lowest free ids, and the engine over
// real ranks submitting the same tensors step after step through it (on,
// off, evicting), or a cached name with other metadata.
#include "runtime/engine/response_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "runtime/context.h"
#include "runtime/engine/engine.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;

struct CacheCase {
  int size;
  size_t capacity;
};

class ResponseCacheTest : public ::testing::TestWithParam<CacheCase> {};

// The same tensors step after step (the second step onwards goes through
// the cache), on, off and evicting (capacity below the tensors per step).
TEST_P(ResponseCacheTest, RepeatedStepsStayCorrect) {
  const int size = GetParam().size;
  RunRanks(
      size, 1 << 20,
      [&](Context& ctx, int rank) {
        for (int step = 0; step < 4; ++step) {
          std::vector<std::vector<float>> bufs(8);
          std::vector<std::shared_ptr<Completion>> done(8);
          std::vector<int> order = {0, 1, 2, 3, 4, 5, 6, 7};
          std::shuffle(order.begin(), order.end(),
                       std::mt19937(step * 10 + rank));
          for (int k : order) {
            bufs[k].assign(10 + k, static_cast<float>(rank + step + k));
            Request r;
            r.name = "w" + std::to_string(k);
            r.count = 10 + k;
            r.reduce = k % 2 ? ReduceOp::kMax : ReduceOp::kSum;
            done[k] = ctx.engine().Enqueue(r, bufs[k].data());
          }
          for (int k = 0; k < 8; ++k) {
            Status s = done[k]->Wait();
            ASSERT_TRUE(s.ok())
                << "step " << step << " w" << k << ": " << s.ToString();
            float want = 0;
            for (int q = 0; q < size; ++q) {
              float v = static_cast<float>(q + step + k);
              want = k % 2 ? std::max(want, v) : want + v;
            }
            for (float x : bufs[k])
              ASSERT_EQ(x, want) << "step " << step << " w" << k;
          }
        }
        // A cached name asked for with new metadata on one rank: the entry
        // is dropped everywhere and the mismatch is an error, not a hang.
        std::vector<float> x(20, 1.0f);
        Request r;
        r.name = "w0";
        r.count = rank == 0 ? 10 : 11;
        Status s = ctx.engine().Enqueue(r, x.data())->Wait();
        if (size > 1) {
          EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
        } else {
          EXPECT_TRUE(s.ok());
        }
        // And the engine goes on.
        Request again;
        again.name = "w1";
        again.count = 11;
        again.reduce = ReduceOp::kMax;
        EXPECT_TRUE(ctx.engine().Enqueue(again, x.data())->Wait().ok());
      },
      milliseconds(20000),
      [&](WorkerConfig& c) { c.engine.cache_capacity = GetParam().capacity; });
}

INSTANTIATE_TEST_SUITE_P(OnOffEvicting, ResponseCacheTest,
                         ::testing::Values(CacheCase{1, 1024},
                                           CacheCase{2, 1024}, CacheCase{2, 0},
                                           CacheCase{2, 3}, CacheCase{3, 1024},
                                           CacheCase{3, 3}, CacheCase{4, 5}),
                         [](const auto& info) {
                           return "np" + std::to_string(info.param.size) +
                                  "_cache" +
                                  std::to_string(info.param.capacity);
                         });

TEST(ResponseCacheUnitTest, LruWithLowestFreeIds) {
  ResponseCache cache(2);
  Request a, b, c;
  a.name = "a";
  b.name = "b";
  c.name = "c";
  EXPECT_FALSE(cache.Put(a));
  EXPECT_FALSE(cache.Put(b));
  EXPECT_EQ(*cache.Lookup(a), 0u);
  EXPECT_EQ(*cache.Lookup(b), 1u);
  EXPECT_FALSE(cache.Put(a));  // touch: b is now the oldest
  auto evicted = cache.Put(c);
  ASSERT_TRUE(evicted);
  EXPECT_EQ(evicted->name, "b");
  EXPECT_EQ(*cache.Lookup(c), 1u);  // reuses b's id
  EXPECT_FALSE(cache.Lookup(b));
  Request a2 = a;
  a2.count = 5;
  EXPECT_FALSE(cache.Lookup(a2));  // other metadata: not a hit
  EXPECT_EQ(*cache.Erase("a"), 0u);
  EXPECT_FALSE(cache.Has(0));
  ResponseCache off(0);
  EXPECT_FALSE(off.Put(a));
  EXPECT_FALSE(off.Lookup(a));
}

// A loop's tensor found again by the id its entry remembers (no lookup):
// when its metadata changes between steps it is not taken for its cached
// self. Changed alike on every rank, it is reduced over its new size;
// changed on one rank only, it is the mismatch every rank reports.
TEST(ResponseCacheUnitTest,
     ANameWhoseMetadataChangesIsNotTakenForItsCachedSelf) {
  RunRanks(2, 1 << 20, [&](Context& ctx, int rank) {
    for (int step = 0; step < 12; ++step) {
      const bool alike = step % 4 == 2, one_rank = step % 4 == 3;
      const int64_t count = alike || (one_rank && rank == 1) ? 8 : 4;
      std::vector<float> x(static_cast<size_t>(count),
                           static_cast<float>(rank + 1 + step));
      Request r;
      r.name = "changing";
      r.count = count;
      Status s = ctx.engine().Enqueue(r, x.data())->Wait();
      if (one_rank) {
        EXPECT_EQ(s.code(), StatusCode::kInvalidArgument)
            << "step " << step << ": " << s.ToString();
        continue;
      }
      ASSERT_TRUE(s.ok()) << "step " << step << ": " << s.ToString();
      for (float v : x) {
        ASSERT_EQ(v, static_cast<float>(3 + 2 * step)) << "step " << step;
      }
    }
  });
}

}  // namespace
}  // namespace hvd::runtime
