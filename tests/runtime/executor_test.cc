// The executor alone, on a fake backend that records each call and acts as
// a job of two identical ranks (a sum doubles every element).
#include "runtime/engine/executor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace hvd::runtime {
namespace {

class Recording final : public Backend {
 public:
  std::vector<std::string> calls;
  Status Allreduce(void* data, size_t count, DataType type,
                   ReduceOp op) override {
    calls.push_back("allreduce " + std::to_string(count));
    EXPECT_EQ(type, DataType::kFloat32);
    EXPECT_EQ(op, ReduceOp::kSum);
    float* f = static_cast<float*>(data);
    for (size_t i = 0; i < count; ++i) f[i] *= 2;  // two equal ranks
    return Status::Ok();
  }
  Status Allgatherv(const void* in, void* out,
                    const std::vector<size_t>& bytes) override {
    std::string sizes;
    for (size_t b : bytes) sizes += " " + std::to_string(b);
    calls.push_back("allgatherv" + sizes);
    // Rank 0 here; rank 1 sent 9s.
    std::memcpy(out, in, bytes[0]);
    std::memset(static_cast<char*>(out) + bytes[0], 9, bytes[1]);
    return Status::Ok();
  }
  Status Broadcast(void*, size_t bytes, int root) override {
    calls.push_back("broadcast " + std::to_string(bytes) + " from " +
                    std::to_string(root));
    return Status::Ok();
  }
  Status Alltoallv(const void*, const std::vector<size_t>&, void*,
                   const std::vector<size_t>&) override {
    calls.push_back("alltoallv");
    return Status::Ok();
  }
  Status Reducescatter(const void*, void*, const std::vector<size_t>&, DataType,
                       ReduceOp) override {
    calls.push_back("reducescatter");
    return Status::Ok();
  }
  Status Barrier() override { return Status::Ok(); }
  // As a backend that reduces a fused group's tensors where they lie.
  bool pieces = false;
  bool ReducesPieces() const override { return pieces; }
  Status AllreducePieces(const std::vector<Piece>& ps, DataType type,
                         ReduceOp op, double post) override {
    std::string counts;
    for (const Piece& p : ps) counts += " " + std::to_string(p.count);
    calls.push_back("pieces" + counts);
    EXPECT_EQ(type, DataType::kFloat32);
    EXPECT_EQ(op, ReduceOp::kSum);
    for (const Piece& p : ps) {
      float* f = static_cast<float*>(p.data);
      for (size_t i = 0; i < p.count; ++i) f[i] *= 2 * post;
    }
    return Status::Ok();
  }
};

Pending Floats(const std::string& name, std::vector<float>& data,
               OpType type = OpType::kAllreduce) {
  Pending p;
  p.request.name = name;
  p.request.type = type;
  p.request.count = static_cast<int64_t>(data.size());
  p.request.shape = {p.request.count};
  p.data = data.data();
  return p;
}

struct Fixture {
  Recording* backend = new Recording();
  BackendSet set{std::unique_ptr<Backend>(backend), "fake"};
  Executor executor{0, 2, &set, nullptr};
};

TEST(ExecutorTest, AFusedGroupIsOneCallAndEachTensorGetsItsShare) {
  Fixture f;
  std::vector<float> a = {1, 2}, b = {3};
  Pending pa = Floats("a", a), pb = Floats("b", b);
  auto bytes = f.executor.Run({&pa, &pb});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, 12u);
  EXPECT_EQ(f.backend->calls, std::vector<std::string>{"allreduce 3"});
  EXPECT_EQ(a, (std::vector<float>{2, 4}));
  EXPECT_EQ(b, (std::vector<float>{6}));
}

// A backend that reduces the tensors where they lie gets the group as
// pieces: no fusion buffer, and the scale factors still apply once.
TEST(ExecutorTest, AFusedGroupGoesAsPiecesWhereTheBackendTakesThem) {
  Fixture f;
  f.backend->pieces = true;
  std::vector<float> a = {1, 2}, b = {3};
  Pending pa = Floats("a", a), pb = Floats("b", b);
  for (Pending* p : {&pa, &pb}) {
    p->request.prescale = 3.0;
    p->request.average = true;
  }
  auto bytes = f.executor.Run({&pa, &pb});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, 12u);
  EXPECT_EQ(f.backend->calls, std::vector<std::string>{"pieces 2 1"});
  EXPECT_EQ(a, (std::vector<float>{3, 6}));  // x * 3 * 2 / 2
  EXPECT_EQ(b, (std::vector<float>{9}));
  // A tensor alone is no group: one plain call.
  std::vector<float> c = {5};
  Pending pc = Floats("c", c);
  ASSERT_TRUE(f.executor.Run({&pc}).ok());
  EXPECT_EQ(f.backend->calls.back(), "allreduce 1");
}

TEST(ExecutorTest, AverageAndScaleFactorsApplyOnce) {
  Fixture f;
  std::vector<float> a = {1, 2};
  Pending pa = Floats("a", a);
  pa.request.average = true;   // 1/2 after the sum
  pa.request.prescale = 3.0;   // before it
  pa.request.postscale = 0.5;  // and after
  ASSERT_TRUE(f.executor.Run({&pa}).ok());
  EXPECT_EQ(a, (std::vector<float>{1.5f, 3.0f}));  // x * 3 * 2 / 2 * 0.5
}

TEST(ExecutorTest, OtherOperationsTakeTheirOwnCall) {
  Fixture f;
  std::vector<float> x = {1, 2, 3};
  Pending bcast = Floats("x", x, OpType::kBroadcast);
  bcast.request.root = 1;
  auto bytes = f.executor.Run({&bcast});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, 0u);  // autotune scores allreduces only
  std::vector<float> g = {5, 6};
  Output out;
  Pending gather = Floats("g", g, OpType::kAllgather);
  gather.out = &out;
  gather.counts = {2, 1};  // rank 1 has one row
  ASSERT_TRUE(f.executor.Run({&gather}).ok());
  EXPECT_EQ(f.backend->calls, (std::vector<std::string>{"broadcast 12 from 1",
                                                        "allgatherv 8 4"}));
  EXPECT_EQ(out.shape, (std::vector<int64_t>{3}));
  ASSERT_EQ(out.data.size(), 12u);
  float first[2];
  std::memcpy(first, out.data.data(), 8);
  EXPECT_EQ(first[0], 5);
  EXPECT_EQ(first[1], 6);
}

// The caller's allocation receives the output (and `data` stays empty);
// a failed allocation fails the operation.
TEST(ExecutorTest, OutputsGoWhereTheCallerAllocates) {
  Fixture f;
  std::vector<float> g = {5, 6};
  std::vector<float> mine(3, -1);
  std::vector<std::pair<size_t, std::vector<int64_t>>> asked;
  Output out;
  out.allocate = [&](size_t bytes, const std::vector<int64_t>& shape) {
    asked.emplace_back(bytes, shape);
    return static_cast<void*>(mine.data());
  };
  Pending gather = Floats("g", g, OpType::kAllgather);
  gather.request.shape = {2, 1};
  gather.out = &out;
  gather.counts = {2, 1};
  ASSERT_TRUE(f.executor.Run({&gather}).ok());
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].first, 12u);
  EXPECT_EQ(asked[0].second, (std::vector<int64_t>{3, 1}));
  EXPECT_TRUE(out.data.empty());
  EXPECT_EQ(mine[0], 5);
  EXPECT_EQ(mine[1], 6);

  Output refused;
  refused.allocate = [](size_t, const std::vector<int64_t>&) {
    return static_cast<void*>(nullptr);
  };
  gather.out = &refused;
  auto failed = f.executor.Run({&gather});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(failed.status().message().find("12 bytes"), std::string::npos);
}

TEST(ExecutorTest, EagerReductionIsTheSameOnEveryRank) {
  Fixture f;
  const std::vector<float> r0 = {1, 2}, r1 = {3, 4};
  const std::vector<std::string_view> from = {
      {reinterpret_cast<const char*>(r0.data()), 8},
      {reinterpret_cast<const char*>(r1.data()), 8}};
  for (bool average : {false, true}) {
    std::vector<float> mine = r0;
    Pending p = Floats("e", mine);
    p.request.average = average;
    EXPECT_EQ(f.executor.ReduceEager(&p, from), 8u);
    EXPECT_EQ(mine, average ? (std::vector<float>{2, 3})
                            : (std::vector<float>{4, 6}));
  }
  EXPECT_TRUE(f.backend->calls.empty());  // no collective
}

}  // namespace
}  // namespace hvd::runtime
