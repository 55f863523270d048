// Merging two blocks' messages of one small cached allreduce on the way
// (runtime/engine/eager_merge.h): what merges, into what bytes, and what
// stays apart.
#include "runtime/engine/eager_merge.h"

#include <gtest/gtest.h>

#include <cstring>

#include "runtime/engine/message.h"

namespace hvd::runtime {
namespace {

Request Allreduce(const std::string& name, int64_t count, ReduceOp op) {
  Request r;
  r.name = name;
  r.type = OpType::kAllreduce;
  r.dtype = DataType::kFloat32;
  r.reduce = op;
  r.count = count;
  r.shape = {count};
  return r;
}

// A cycle's message as BuildMessage makes it: the bits of `ids`, no
// requests, the data of `tensors` (name, floats), and knobs if any.
std::string Message(
    const std::vector<uint32_t>& ids,
    const std::vector<std::pair<std::string, std::vector<float>>>& tensors,
    uint8_t stop = 0, bool knobs = false) {
  CachedIds bits;
  for (uint32_t id : ids) bits.insert(id);
  std::string m;
  PutMessageHead(m, stop, bits.bits(), {});
  PutValue<uint32_t>(m, static_cast<uint32_t>(tensors.size()));
  for (const auto& [name, data] : tensors) {
    PutEager(m, name,
             std::string_view(reinterpret_cast<const char*>(data.data()),
                              data.size() * sizeof(float)));
  }
  PutKnobs(m, knobs ? std::optional<Knobs>(Knobs{}) : std::nullopt);
  return m;
}

std::vector<float> DataOf(const std::string& m) {
  CycleMessage parsed;
  EXPECT_TRUE(ParseCycleMessage(m, &parsed));
  EXPECT_EQ(parsed.eager.size(), 1u);
  std::vector<float> v(parsed.eager[0].second.size() / sizeof(float));
  std::memcpy(v.data(), parsed.eager[0].second.data(),
              v.size() * sizeof(float));
  return v;
}

TEST(EagerMergeTest, OneCachedAllreduceMergesItsDataByItsOp) {
  for (ReduceOp op :
       {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    ResponseCache cache(8);
    (void)cache.Put(Allreduce("other", 1, ReduceOp::kSum));
    (void)cache.Put(Allreduce("grad", 3, op));
    const uint32_t id = *cache.Lookup(Allreduce("grad", 3, op));
    const std::string low = Message({id}, {{"grad", {1, 5, -2}}});
    const std::string high = Message({id}, {{"grad", {4, 2, 3}}});
    EagerMerger merger(cache);
    std::string out;
    ASSERT_TRUE(merger.Merge(low, high, &out)) << ReduceOpName(op);
    std::vector<float> want = {1, 5, -2};
    ReduceBuffers(DataType::kFloat32, op, want.data(), want.data(),
                  std::vector<float>{4, 2, 3}.data(), 3);
    EXPECT_EQ(DataOf(out), want) << ReduceOpName(op);
    // The head and tail as they were: the merged message is one more of
    // the cycle's.
    EXPECT_EQ(out.size(), low.size());
    EXPECT_EQ(out.substr(0, 10), low.substr(0, 10));
    // Another merger (another rank) merging the same two: the same bytes.
    EagerMerger elsewhere(cache);
    std::string again;
    ASSERT_TRUE(elsewhere.Merge(low, high, &again));
    EXPECT_EQ(again, out);
  }
}

TEST(EagerMergeTest, WhatCannotMergeStaysApart) {
  ResponseCache cache(8);
  (void)cache.Put(Allreduce("a", 2, ReduceOp::kSum));
  (void)cache.Put(Allreduce("b", 2, ReduceOp::kSum));
  Request scaled = Allreduce("scaled", 2, ReduceOp::kSum);
  scaled.prescale = 0.5;
  (void)cache.Put(scaled);
  const uint32_t a = *cache.Lookup(Allreduce("a", 2, ReduceOp::kSum));
  const uint32_t b = *cache.Lookup(Allreduce("b", 2, ReduceOp::kSum));
  const uint32_t s = *cache.Lookup(scaled);
  const std::string good = Message({a}, {{"a", {1, 2}}});
  struct Case {
    const char* why;
    std::string high;
  };
  const std::vector<Case> cases = {
      {"another tensor", Message({b}, {{"b", {1, 2}}})},
      {"two tensors", Message({a, b}, {{"a", {1, 2}}, {"b", {1, 2}}})},
      {"a stop", Message({a}, {{"a", {1, 2}}}, 1)},
      {"knobs", Message({a}, {{"a", {1, 2}}}, 0, true)},
      {"other length", Message({a}, {{"a", {1, 2, 3}}})},
      {"no data", Message({a}, {})},
  };
  EagerMerger merger(cache);
  for (const Case& c : cases) {
    std::string out = "untouched";
    EXPECT_FALSE(merger.Merge(good, c.high, &out)) << c.why;
    EXPECT_FALSE(merger.Merge(c.high, good, &out)) << c.why;
    EXPECT_EQ(out, "untouched") << c.why;
  }
  // Alike, but not mergeable alone: prescaled, an id the cache does not
  // hold, a name other than the entry's.
  std::string out;
  const std::string pre = Message({s}, {{"scaled", {1, 2}}});
  EXPECT_FALSE(merger.Merge(pre, pre, &out));
  const std::string unknown = Message({7}, {{"a", {1, 2}}});
  EXPECT_FALSE(merger.Merge(unknown, unknown, &out));
  const std::string renamed = Message({a}, {{"b", {1, 2}}});
  EXPECT_FALSE(merger.Merge(renamed, renamed, &out));
  EXPECT_TRUE(merger.Merge(good, good, &out));
}

}  // namespace
}  // namespace hvd::runtime
