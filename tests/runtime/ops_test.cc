// Every op of the engine on every dtype, with shapes, at world sizes 1 to
// 4, checked element by element; join, barrier and the tensor-view errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "runtime/context.h"
#include "runtime/engine/engine.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// Small values keep every op exact in every dtype (int8 products of four
// ranks stay at most 16).
double Value(int rank, size_t i) { return 1 + (i + rank) % 2; }

std::vector<uint8_t> Fill(DataType t, size_t n, int rank) {
  std::vector<uint8_t> buf(n * DataTypeSize(t));
  for (size_t i = 0; i < n; ++i)
    SetElementFromDouble(t, buf.data(), i, Value(rank, i));
  return buf;
}

void ExpectNear(DataType t, double got, double want, const std::string& what) {
  // Averages are rounded to the element type.
  double scale = std::max(1.0, std::abs(want));
  double tol = t == DataType::kFloat16 || t == DataType::kBFloat16
                   ? 1e-2 * scale
               : t == DataType::kFloat32 ? 1e-6 * scale
                                         : 1e-12 * scale;
  ASSERT_NEAR(got, want, tol) << what;
}

Request Make(const std::string& name, OpType type, DataType t,
             std::vector<int64_t> shape) {
  Request r;
  r.name = name;
  r.type = type;
  r.dtype = t;
  r.shape = std::move(shape);
  r.count = 1;
  for (int64_t d : r.shape) r.count *= d;
  return r;
}

class OpMatrixTest : public ::testing::TestWithParam<int> {};

// Sizes 0, 1, odd, and past the size that travels with the negotiation
// (so both the local reduction and Gloo are covered).
constexpr size_t kSizes[] = {0, 1, 33, 20000};

TEST_P(OpMatrixTest, AllreduceEveryDtypeOpAndSize) {
  const int size = GetParam();
  RunRanks(size, [&](Context& ctx, int rank) {
    struct T {
      Request r;
      std::vector<uint8_t> buf;
      std::shared_ptr<Completion> done;
    };
    std::vector<T> all;
    for (DataType t : kAllDataTypes) {
      for (size_t n : kSizes) {
        for (int op = 0; op < 5; ++op) {  // Sum, Min, Max, Product, Average
          T x;
          x.r = Make(std::string(DataTypeName(t)) + "." + std::to_string(n) +
                         "." + std::to_string(op),
                     OpType::kAllreduce, t, {static_cast<int64_t>(n)});
          x.r.reduce = op == 4 ? ReduceOp::kSum : kAllReduceOps[op];
          x.r.average = op == 4;
          x.buf = Fill(t, n, rank);
          all.push_back(std::move(x));
        }
      }
    }
    // Every rank submits in its own order.
    std::vector<size_t> order(all.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::rotate(order.begin(), order.begin() + (rank * 7) % order.size(),
                order.end());
    for (size_t k : order) {
      all[k].done = ctx.engine().Enqueue(all[k].r, all[k].buf.data());
    }
    for (T& x : all) {
      Status s = x.done->Wait();
      ASSERT_TRUE(s.ok()) << x.r.name << ": " << s.ToString();
      for (size_t i = 0; i < static_cast<size_t>(x.r.count); ++i) {
        double want = Value(0, i);
        for (int q = 1; q < size; ++q) {
          double v = Value(q, i);
          switch (x.r.reduce) {
            case ReduceOp::kSum:
              want += v;
              break;
            case ReduceOp::kMin:
              want = std::min(want, v);
              break;
            case ReduceOp::kMax:
              want = std::max(want, v);
              break;
            case ReduceOp::kProduct:
              want *= v;
              break;
          }
        }
        if (x.r.average) {
          // Integer averages round toward zero, as Horovod's.
          want = want * (1.0 / size);
          bool integer = x.r.dtype != DataType::kFloat16 &&
                         x.r.dtype != DataType::kBFloat16 &&
                         x.r.dtype != DataType::kFloat32 &&
                         x.r.dtype != DataType::kFloat64;
          if (integer) want = std::trunc(want);
        }
        ExpectNear(x.r.dtype, ElementAsDouble(x.r.dtype, x.buf.data(), i), want,
                   x.r.name + " element " + std::to_string(i) + " rank " +
                       std::to_string(rank));
      }
    }
  });
}

TEST_P(OpMatrixTest, GatherScatterBroadcastEveryDtypeWithRows) {
  const int size = GetParam();
  RunRanks(size, [&](Context& ctx, int rank) {
    for (DataType t : kAllDataTypes) {
      const std::string dt(DataTypeName(t));
      const int64_t cols = 3;
      // Allgather: rank r has r + 1 rows of 3.
      {
        std::vector<uint8_t> in = Fill(t, (rank + 1) * cols, rank);
        Output out;
        Status s = ctx.engine()
                       .Enqueue(Make("ag." + dt, OpType::kAllgather, t,
                                     {rank + 1, cols}),
                                in.data(), &out)
                       ->Wait();
        ASSERT_TRUE(s.ok()) << s.ToString();
        int64_t rows = size * (size + 1) / 2;
        ASSERT_EQ(out.shape, (std::vector<int64_t>{rows, cols})) << dt;
        size_t at = 0;
        for (int q = 0; q < size; ++q) {
          for (int64_t i = 0; i < (q + 1) * cols; ++i, ++at) {
            ASSERT_EQ(ElementAsDouble(t, out.data.data(), at), Value(q, i))
                << dt << " from rank " << q;
          }
        }
      }
      // Broadcast from the last rank.
      for (size_t n : kSizes) {
        std::vector<uint8_t> buf = Fill(t, n, rank);
        Request r = Make("bc." + dt + std::to_string(n), OpType::kBroadcast, t,
                         {static_cast<int64_t>(n)});
        r.root = size - 1;
        ASSERT_TRUE(ctx.engine().Enqueue(r, buf.data())->Wait().ok());
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(ElementAsDouble(t, buf.data(), i), Value(size - 1, i))
              << dt;
        }
      }
      // Alltoall: rank s sends (s + d) % 2 + 1 rows of 3 to rank d.
      {
        std::vector<int64_t> splits(size);
        int64_t rows = 0;
        for (int d = 0; d < size; ++d) rows += splits[d] = (rank + d) % 2 + 1;
        std::vector<uint8_t> send(rows * cols * DataTypeSize(t));
        int64_t at = 0;
        for (int d = 0; d < size; ++d) {
          for (int64_t e = 0; e < splits[d] * cols; ++e, ++at) {
            SetElementFromDouble(t, send.data(), at, 10 * rank + d);
          }
        }
        Request r = Make("a2a." + dt, OpType::kAlltoall, t, {rows, cols});
        r.splits = splits;
        Output out;
        Status s = ctx.engine().Enqueue(r, send.data(), &out)->Wait();
        ASSERT_TRUE(s.ok()) << s.ToString();
        int64_t got_rows = 0;
        for (int q = 0; q < size; ++q) got_rows += (q + rank) % 2 + 1;
        ASSERT_EQ(out.shape, (std::vector<int64_t>{got_rows, cols}));
        at = 0;
        for (int q = 0; q < size; ++q) {
          for (int64_t e = 0; e < ((q + rank) % 2 + 1) * cols; ++e, ++at) {
            ASSERT_EQ(ElementAsDouble(t, out.data.data(), at), 10 * q + rank)
                << dt << " from " << q;
          }
        }
      }
      // Reducescatter of 2 * size + 1 rows of 3: uneven blocks of rows.
      {
        const int64_t rows = 2 * size + 1;
        std::vector<uint8_t> in = Fill(t, rows * cols, rank);
        Output out;
        Request r = Make("rs." + dt, OpType::kReducescatter, t, {rows, cols});
        Status s = ctx.engine().Enqueue(r, in.data(), &out)->Wait();
        ASSERT_TRUE(s.ok()) << s.ToString();
        int64_t mine = rows / size + (rank < rows % size);
        int64_t first = 0;
        for (int q = 0; q < rank; ++q) first += rows / size + (q < rows % size);
        ASSERT_EQ(out.shape, (std::vector<int64_t>{mine, cols}));
        for (int64_t e = 0; e < mine * cols; ++e) {
          double want = 0;
          for (int q = 0; q < size; ++q) want += Value(q, first * cols + e);
          ExpectNear(t, ElementAsDouble(t, out.data.data(), e), want, dt);
        }
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, OpMatrixTest,
                         ::testing::Values(1, 2, 3, 4), [](const auto& info) {
                           return "np" + std::to_string(info.param);
                         });

TEST(ShapeTest, MismatchedShapesNameTheTensorAndBothShapes) {
  RunRanks(2, [&](Context& ctx, int rank) {
    std::vector<float> x(6, 1.0f);
    Request r = Make(
        "w", OpType::kAllreduce, DataType::kFloat32,
        rank == 0 ? std::vector<int64_t>{2, 3} : std::vector<int64_t>{3, 2});
    Status s = ctx.engine().Enqueue(r, x.data())->Wait();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("tensor 'w'"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("shape [3x2]"), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("shape [2x3]"), std::string::npos)
        << s.message();
    // Allgather: the first dimension may differ, the others may not.
    Output out;
    Request g = Make(
        "g", OpType::kAllgather, DataType::kFloat32,
        rank == 0 ? std::vector<int64_t>{1, 6} : std::vector<int64_t>{2, 3});
    s = ctx.engine().Enqueue(g, x.data(), &out)->Wait();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    // A shape that does not match the element count is refused at once.
    Request bad = Make("bad", OpType::kAllreduce, DataType::kFloat32, {2, 3});
    bad.count = 5;
    s = ctx.engine().Enqueue(bad, x.data())->Wait();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("shape of 6 elements"), std::string::npos)
        << s.message();
  });
}

TEST(DeviceTest, CudaTensorWithoutAVisibleDeviceIsRefusedAtOnce) {
  RunRanks(1, [&](Context& ctx, int) {
    float x = 1;
    Request r = Make("gpu", OpType::kAllreduce, DataType::kFloat32, {1});
    r.device = 64;  // no machine has this many
    Status s = ctx.engine().Enqueue(r, &x)->Wait();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("CUDA device 64"), std::string::npos)
        << s.message();
    // The engine goes on.
    Request cpu = Make("cpu", OpType::kAllreduce, DataType::kFloat32, {1});
    EXPECT_TRUE(ctx.engine().Enqueue(cpu, &x)->Wait().ok());
  });
}

TEST(JoinTest, JoinedRanksContributeZerosUntilEveryoneJoins) {
  const int size = 3;
  RunRanks(size, [&](Context& ctx, int rank) {
    // Rank 0 runs out of data after 2 steps, rank 1 after 4, rank 2 after
    // 4 and joins last. Small and large tensors: both paths.
    const int steps = rank == 0 ? 2 : 4;
    for (int step = 0; step < steps; ++step) {
      for (size_t n : {size_t{4}, size_t{20000}}) {
        std::vector<float> x(n, static_cast<float>(rank + 1));
        Request r = Make(
            "step" + std::to_string(step) + "." + std::to_string(n),
            OpType::kAllreduce, DataType::kFloat32, {static_cast<int64_t>(n)});
        Status s = ctx.engine().Enqueue(r, x.data())->Wait();
        ASSERT_TRUE(s.ok()) << s.ToString();
        float want = step < 2 ? 1 + 2 + 3 : 2 + 3;  // rank 0 gives zeros
        for (float v : x) ASSERT_EQ(v, want) << "step " << step << " n " << n;
      }
    }
    if (rank == 1) {
      // Only allreduces take part in a join.
      std::vector<float> b(2, 1.0f);
      Request bc = Make("bcast", OpType::kBroadcast, DataType::kFloat32, {2});
      Status s = ctx.engine().Enqueue(bc, b.data())->Wait();
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(s.message().find("rank(s) 0 have joined"), std::string::npos)
          << s.message();
    }
    if (rank == 2) {
      std::vector<float> b(2, 1.0f);
      Request bc = Make("bcast", OpType::kBroadcast, DataType::kFloat32, {2});
      EXPECT_FALSE(ctx.engine().Enqueue(bc, b.data())->Wait().ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    Request j;
    j.name = kJoinName;
    j.type = OpType::kJoin;
    auto done = ctx.engine().Enqueue(j, nullptr);
    Status s = done->Wait();
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(done->value(), 2) << "the last rank to join";
    // After everyone joined, the job goes on normally.
    std::vector<float> x(3, 1.0f);
    Request after = Make("after", OpType::kAllreduce, DataType::kFloat32, {3});
    ASSERT_TRUE(ctx.engine().Enqueue(after, x.data())->Wait().ok());
    EXPECT_EQ(x[0], 3.0f);
  });
}

TEST(BarrierTest, NoRankLeavesBeforeTheLastArrives) {
  const int size = 3;
  auto start = Clock::now();
  RunRanks(size, [&](Context& ctx, int rank) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * rank));
    Request b;
    b.name = "b";
    b.type = OpType::kBarrier;
    ASSERT_TRUE(ctx.engine().Enqueue(b, nullptr)->Wait().ok());
    EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(200))
        << "rank " << rank << " left the barrier early";
  });
}

}  // namespace
}  // namespace hvd::runtime
