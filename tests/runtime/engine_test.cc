// The engine over real ranks (threads with their own contexts): tensors
// submitted in different orders per rank, fused or not, every op checked
// element by element, and the error paths.
#include "runtime/engine/engine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "rendezvous/server.h"
#include "runtime/context.h"
#include "runtime/engine/response_cache.h"
#include "runtime/timeline.h"
#include "runtime/transport/local/local.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;

TEST(EngineCodecTest, RoundTripsAndRejectsGarbage) {
  Request a;
  a.name = "layer1/weights";
  a.dtype = DataType::kBFloat16;
  a.reduce = ReduceOp::kMax;
  a.count = 12345;
  a.prescale = 0.5;
  a.group = "grads";
  Request b;
  b.name = "b";
  b.type = OpType::kBroadcast;
  b.root = 3;
  std::string msg = Engine::Encode(1, {a, b});
  uint8_t sd = 0;
  auto back = Engine::Decode(msg, &sd);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(sd, 1);
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].name, "layer1/weights");
  EXPECT_EQ((*back)[0].count, 12345);
  EXPECT_EQ((*back)[0], a);  // every field, the group included
  EXPECT_EQ((*back)[1], b);
  EXPECT_EQ((*back)[0].prescale, 0.5);
  EXPECT_EQ((*back)[1].root, 3);
  EXPECT_EQ(Engine::Decode(msg.substr(0, msg.size() - 1), &sd).status().code(),
            StatusCode::kDataLoss);
  EXPECT_FALSE(Engine::Decode(msg + "x", &sd).ok());
}

struct Case {
  int size;
  size_t fusion;
};

class EngineTest : public ::testing::TestWithParam<Case> {};

TEST_P(EngineTest, ManyTensorsInDifferentOrdersPerRank) {
  const int size = GetParam().size;
  RunRanks(size, GetParam().fusion, [&](Context& ctx, int rank) {
    struct T {
      std::string name;
      DataType dtype;
      bool average;
      ReduceOp op;
      size_t n;
      std::vector<uint8_t> buf;
    };
    std::vector<T> tensors;
    int i = 0;
    for (DataType dt : {DataType::kFloat32, DataType::kFloat64,
                        DataType::kInt32, DataType::kFloat16}) {
      for (size_t n : {size_t{0}, size_t{1}, size_t{33}, size_t{5000}}) {
        for (ReduceOp op : kAllReduceOps) {
          T t{"t" + std::to_string(i++), dt, false, op, n, {}};
          tensors.push_back(t);
        }
        T avg{"t" + std::to_string(i++), dt, true, ReduceOp::kSum, n, {}};
        tensors.push_back(avg);
      }
    }
    // Each rank submits in its own order.
    std::vector<size_t> order(tensors.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::shuffle(order.begin(), order.end(), std::mt19937(rank + 1));
    std::vector<std::shared_ptr<Completion>> done(tensors.size());
    for (size_t k : order) {
      T& t = tensors[k];
      t.buf.resize(t.n * DataTypeSize(t.dtype));
      for (size_t e = 0; e < t.n; ++e) {
        SetElementFromDouble(t.dtype, t.buf.data(), e,
                             2 * (1 + (e + rank) % 3));
      }
      Request r;
      r.name = t.name;
      r.dtype = t.dtype;
      r.reduce = t.op;
      r.average = t.average;
      r.count = static_cast<int64_t>(t.n);
      done[k] = ctx.engine().Enqueue(r, t.buf.data());
    }
    for (size_t k = 0; k < tensors.size(); ++k) {
      Status s = done[k]->Wait();
      ASSERT_TRUE(s.ok()) << tensors[k].name << ": " << s.ToString();
      const T& t = tensors[k];
      for (size_t e = 0; e < t.n; ++e) {
        double want = 2 * (1 + e % 3);
        for (int r = 1; r < size; ++r) {
          double v = 2 * (1 + (e + r) % 3);
          want = t.op == ReduceOp::kSum   ? want + v
                 : t.op == ReduceOp::kMin ? std::min(want, v)
                 : t.op == ReduceOp::kMax ? std::max(want, v)
                                          : want * v;
        }
        if (t.average) {
          want = want / size;
          if (t.dtype == DataType::kInt32) want = std::trunc(want);
        }
        double got = ElementAsDouble(t.dtype, t.buf.data(), e);
        if (t.dtype == DataType::kFloat16 || t.dtype == DataType::kFloat32) {
          ASSERT_NEAR(got, want, 1e-3 * std::abs(want)) << t.name << " e=" << e;
        } else {
          ASSERT_EQ(got, want) << t.name << " e=" << e;
        }
      }
    }
  });
}

TEST_P(EngineTest, BroadcastAndScaleFactors) {
  const int size = GetParam().size;
  RunRanks(size, GetParam().fusion, [&](Context& ctx, int rank) {
    for (int root = 0; root < size; ++root) {
      std::vector<double> v(100, rank);
      Request r;
      r.name = "bcast" + std::to_string(root);
      r.type = OpType::kBroadcast;
      r.dtype = DataType::kFloat64;
      r.count = 100;
      r.root = root;
      ASSERT_TRUE(ctx.engine().Enqueue(r, v.data())->Wait().ok());
      for (double x : v) ASSERT_EQ(x, root);
    }
    std::vector<float> x(10, 1.0f);
    Request r;
    r.name = "scaled";
    r.count = 10;
    r.prescale = 2.0;
    r.postscale = 0.25;
    ASSERT_TRUE(ctx.engine().Enqueue(r, x.data())->Wait().ok());
    for (float f : x) ASSERT_EQ(f, 2.0f * size * 0.25f);
  });
}

TEST_P(EngineTest, AllgatherWithDifferentFirstDimensions) {
  const int size = GetParam().size;
  RunRanks(size, GetParam().fusion, [&](Context& ctx, int rank) {
    // Rank r contributes r elements (rank 0 none) of value r, as int64.
    std::vector<int64_t> mine(rank, rank);
    Output result;
    std::vector<uint8_t>& out = result.data;
    Request r;
    r.name = "gather";
    r.type = OpType::kAllgather;
    r.dtype = DataType::kInt64;
    r.count = rank;
    Status s = ctx.engine().Enqueue(r, mine.data(), &result)->Wait();
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::vector<int64_t> want;
    for (int q = 0; q < size; ++q) want.insert(want.end(), q, q);
    ASSERT_EQ(out.size(), want.size() * 8);
    std::vector<int64_t> got(want.size());
    if (!out.empty()) std::memcpy(got.data(), out.data(), out.size());
    EXPECT_EQ(got, want);
    // Different dtypes across ranks are an error naming the tensor.
    if (size > 1) {
      Request bad = r;
      bad.name = "gather-bad";
      bad.dtype = rank == 0 ? DataType::kInt64 : DataType::kInt32;
      Status e = ctx.engine().Enqueue(bad, mine.data(), &result)->Wait();
      EXPECT_EQ(e.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(e.message().find("tensor 'gather-bad'"), std::string::npos);
      EXPECT_NE(e.message().find("allgather of"), std::string::npos)
          << e.message();
    }
  });
}

TEST_P(EngineTest, ReducescatterAndAlltoall) {
  const int size = GetParam().size;
  RunRanks(size, GetParam().fusion, [&](Context& ctx, int rank) {
    // Reducescatter of 2*size+1 floats: ranks' blocks are uneven.
    const int64_t total = 2 * size + 1;
    std::vector<float> in(total);
    for (int64_t i = 0; i < total; ++i) in[i] = static_cast<float>(i + rank);
    Output result;
    std::vector<uint8_t>& out = result.data;
    Request rs;
    rs.name = "rs";
    rs.type = OpType::kReducescatter;
    rs.count = total;
    Status s = ctx.engine().Enqueue(rs, in.data(), &result)->Wait();
    ASSERT_TRUE(s.ok()) << s.ToString();
    int64_t begin = 0;
    for (int r = 0; r < rank; ++r) begin += total / size + (r < total % size);
    int64_t mine = total / size + (rank < total % size);
    ASSERT_EQ(out.size(), static_cast<size_t>(mine) * 4);
    const float* got = reinterpret_cast<const float*>(out.data());
    for (int64_t i = 0; i < mine; ++i) {
      float want = 0;
      for (int q = 0; q < size; ++q) want += static_cast<float>(begin + i + q);
      ASSERT_EQ(got[i], want) << i;
    }
    // Alltoall: rank s sends (s + d) % 2 + 1 int32 of value 100*s+d to d.
    std::vector<int64_t> splits(size);
    std::vector<int32_t> send;
    for (int d = 0; d < size; ++d) {
      splits[d] = (rank + d) % 2 + 1;
      send.insert(send.end(), splits[d], 100 * rank + d);
    }
    Request a2a;
    a2a.name = "a2a";
    a2a.type = OpType::kAlltoall;
    a2a.dtype = DataType::kInt32;
    a2a.count = static_cast<int64_t>(send.size());
    a2a.splits = splits;
    Output received;
    std::vector<uint8_t>& recv = received.data;
    s = ctx.engine().Enqueue(a2a, send.data(), &received)->Wait();
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::vector<int32_t> want;
    for (int q = 0; q < size; ++q)
      want.insert(want.end(), (q + rank) % 2 + 1, 100 * q + rank);
    std::vector<int32_t> gotv(recv.size() / 4);
    if (!recv.empty()) std::memcpy(gotv.data(), recv.data(), recv.size());
    EXPECT_EQ(gotv, want);
    std::vector<int64_t> want_splits;
    for (int q = 0; q < size; ++q) want_splits.push_back((q + rank) % 2 + 1);
    EXPECT_EQ(received.received_splits, want_splits);
    // Splits that do not add up are refused at once.
    Request bad = a2a;
    bad.name = "a2a-bad";
    bad.count += 1;
    EXPECT_EQ(ctx.engine().Enqueue(bad, send.data(), &received)->Wait().code(),
              StatusCode::kInvalidArgument);
  });
}

TEST_P(EngineTest, GroupedAllreduce) {
  const int size = GetParam().size;
  RunRanks(size, GetParam().fusion, [&](Context& ctx, int rank) {
    std::vector<std::vector<double>> bufs(5);
    std::vector<std::pair<Request, void*>> group;
    for (int i = 0; i < 5; ++i) {
      bufs[i].assign(3 + i, rank + i);
      Request r;
      r.name = "group." + std::to_string(i);
      r.dtype = DataType::kFloat64;
      r.count = 3 + i;
      group.push_back({r, bufs[i].data()});
    }
    auto done = ctx.engine().EnqueueGroup(std::move(group));
    ASSERT_EQ(done.size(), 5u);
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(done[i]->Wait().ok());
      double want = 0;
      for (int q = 0; q < size; ++q) want += q + i;
      for (double x : bufs[i]) ASSERT_EQ(x, want);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(SizesAndFusion, EngineTest,
                         ::testing::Values(Case{1, 128u << 20},
                                           Case{2, 128u << 20}, Case{2, 0},
                                           Case{3, 4096}, Case{4, 128u << 20},
                                           Case{4, 0}),
                         [](const auto& info) {
                           return "np" + std::to_string(info.param.size) +
                                  "_fusion" + std::to_string(info.param.fusion);
                         });

TEST(EngineErrorTest, MismatchedCountsNameTensorAndRanks) {
  RunRanks(2, 1 << 20, [&](Context& ctx, int rank) {
    std::vector<float> x(11);
    Request r;
    r.name = "grad/w";
    r.count = rank == 0 ? 10 : 11;
    Status s = ctx.engine().Enqueue(r, x.data())->Wait();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("tensor 'grad/w'"), std::string::npos)
        << s.message();
    // Lower rank first, whichever request the engine saw first.
    EXPECT_NE(s.message().find("rank 0 asks for sum allreduce of float32 "
                               "shape [10] but rank 1 for sum allreduce of "
                               "float32 shape [11]"),
              std::string::npos)
        << s.message();
    // The engine goes on working after a mismatch.
    Request ok;
    ok.name = "after";
    ok.count = 1;
    EXPECT_TRUE(ctx.engine().Enqueue(ok, x.data())->Wait().ok());
  });
}

TEST(EngineErrorTest, DuplicateNameInFlightIsRefused) {
  // Rank 1 submits "dup" only after rank 0's second try: were it sooner,
  // the first "dup" could complete in between (a slow scheduler, TSan) and
  // the second would be a new, legitimate one that nobody matches.
  std::atomic<bool> tried{false};
  RunRanks(2, 1 << 20, [&](Context& ctx, int rank) {
    std::vector<float> a(4), b(4);
    Request r;
    r.name = rank == 0 ? "dup" : "other";
    r.count = 4;
    auto first = ctx.engine().Enqueue(r, a.data());
    if (rank == 0) {
      Status s = ctx.engine().Enqueue(r, b.data())->Wait();
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(s.message().find("already in flight"), std::string::npos);
      tried = true;
    } else {
      while (!tried) std::this_thread::sleep_for(milliseconds(1));
    }
    // Complete the crossed pair so both ranks finish.
    Request other;
    other.name = rank == 0 ? "other" : "dup";
    other.count = 4;
    auto second = ctx.engine().Enqueue(other, b.data());
    EXPECT_TRUE(first->Wait().ok());
    EXPECT_TRUE(second->Wait().ok());
  });
}

// Submits a 4-element allreduce of `name` and waits until it is done
// without collecting its result (no Wait): the name stays held.
std::shared_ptr<Completion> DoneNotCollected(Engine& engine,
                                             const std::string& name,
                                             float* data) {
  Request r;
  r.name = name;
  r.count = 4;
  auto done = engine.Enqueue(r, data);
  while (!done->done()) std::this_thread::sleep_for(milliseconds(1));
  return done;
}

// A name stays taken until the caller has its result (a wait, a poll that
// found it done) or drops it, not only while it is in flight: the second
// submission is refused every time, however fast the first completed.
TEST(EngineErrorTest, ANameStaysTakenUntilItsResultIsCollected) {
  RunRanks(2, 1 << 20, [&](Context& ctx, int) {
    std::vector<float> a(4, 1.0f), b(4, 1.0f);
    auto first = DoneNotCollected(ctx.engine(), "held", a.data());
    Request r;
    r.name = "held";
    r.count = 4;
    Status again = ctx.engine().Enqueue(r, b.data())->Wait();
    EXPECT_EQ(again.code(), StatusCode::kInvalidArgument) << again.message();
    EXPECT_TRUE(first->Wait().ok());  // collected: the name is free
    EXPECT_TRUE(ctx.engine().Enqueue(r, b.data())->Wait().ok());
    // A result nobody holds any more frees its name too.
    r.name = "dropped";
    DoneNotCollected(ctx.engine(), "dropped", a.data()).reset();
    EXPECT_TRUE(ctx.engine().Enqueue(r, b.data())->Wait().ok());
  });
}

// A name whose result is not collected stays taken while the engine drops
// the entries of hundreds of collected names around it (and reuses a
// collected name's entry for its next submission).
TEST(EngineErrorTest, AHeldNameOutlastsTheDroppingOfCollectedOnes) {
  RunRanks(2, 1 << 20, [&](Context& ctx, int rank) {
    std::vector<float> a(4, 1.0f), b(4, 1.0f);
    auto kept = DoneNotCollected(ctx.engine(), "kept", a.data());
    Request r;
    r.name = "kept";
    r.count = 4;
    for (int i = 0; i < 300; ++i) {
      Request other;
      other.name = "step." + std::to_string(i % 150);  // each name twice
      other.count = 4;
      std::vector<float> x(4, static_cast<float>(rank));
      ASSERT_TRUE(ctx.engine().Enqueue(other, x.data())->Wait().ok()) << i;
      ASSERT_EQ(x[0], 1.0f) << i;
    }
    Status again = ctx.engine().Enqueue(r, b.data())->Wait();
    EXPECT_EQ(again.code(), StatusCode::kInvalidArgument) << again.message();
    EXPECT_TRUE(kept->Wait().ok());
    EXPECT_EQ(a[0], 2.0f);
    EXPECT_TRUE(ctx.engine().Enqueue(r, b.data())->Wait().ok());
    EXPECT_EQ(b[0], 2.0f);
  });
}

TEST(EngineErrorTest, DeadPeerFailsPendingHandlesNotHangs) {
  auto start = std::chrono::steady_clock::now();
  RunRanks(
      3, 1 << 20,
      [&](Context& ctx, int rank) {
        if (rank == 2) {
          // Dies without ever starting its engine: its sockets close.
          std::this_thread::sleep_for(milliseconds(300));
          return;
        }
        std::vector<float> x(8);
        Request r;
        r.name = "never-complete";
        r.count = 8;
        Status s = ctx.engine().Enqueue(r, x.data())->Wait();
        EXPECT_FALSE(s.ok());
        EXPECT_NE(s.message().find("rank " + std::to_string(rank)),
                  std::string::npos)
            << s.message();
        // Later submissions fail at once with the same cause.
        Status later = ctx.engine().Enqueue(r, x.data())->Wait();
        EXPECT_FALSE(later.ok());
      },
      milliseconds(5000));
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(30000));
}

TEST(EngineErrorTest, ShutdownOfOneRankEndsTheOthersPendingWork) {
  RunRanks(2, 1 << 20, [&](Context& ctx, int rank) {
    std::vector<float> x(8);
    if (rank == 1) {
      Request warm;
      warm.name = "warm";
      warm.count = 8;
      ASSERT_TRUE(ctx.engine().Enqueue(warm, x.data())->Wait().ok());
      ctx.engine().Shutdown();
      return;
    }
    Request warm;
    warm.name = "warm";
    warm.count = 8;
    ASSERT_TRUE(ctx.engine().Enqueue(warm, x.data())->Wait().ok());
    Request r;
    r.name = "orphan";
    r.count = 8;
    Status s = ctx.engine().Enqueue(r, x.data())->Wait();
    EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
    EXPECT_NE(s.message().find("shutting down"), std::string::npos);
  });
}

// A device backend as NCCL with several streams is one: calls only queue
// (the sum of a one-rank job doubles nothing, so it adds one to tell), and
// the work happens at Flush. Counts how many calls each flush finished.
class DeferringDevice final : public Backend {
 public:
  struct Log {
    std::mutex mu;
    std::vector<size_t> flushed;  // calls finished by each flush
  };
  explicit DeferringDevice(std::shared_ptr<Log> log) : log_(std::move(log)) {}
  bool Defers() const override { return true; }
  Status Flush() override {
    for (auto& [data, count] : queued_) {
      float* f = static_cast<float*>(data);
      for (size_t i = 0; i < count; ++i) f[i] += 1;
    }
    std::lock_guard<std::mutex> lock(log_->mu);
    log_->flushed.push_back(queued_.size());
    queued_.clear();
    return Status::Ok();
  }
  Status Allreduce(void* data, size_t count, DataType, ReduceOp) override {
    queued_.emplace_back(data, count);
    return Status::Ok();
  }
  Status Allgatherv(const void*, void*, const std::vector<size_t>&) override {
    return Status::Unimplemented("fake", "allgatherv");
  }
  Status Broadcast(void*, size_t, int) override { return Status::Ok(); }
  Status Alltoallv(const void*, const std::vector<size_t>&, void*,
                   const std::vector<size_t>&) override {
    return Status::Unimplemented("fake", "alltoallv");
  }
  Status Reducescatter(const void*, void*, const std::vector<size_t>&, DataType,
                       ReduceOp) override {
    return Status::Unimplemented("fake", "reducescatter");
  }
  Status Barrier() override { return Flush(); }

 private:
  std::shared_ptr<Log> log_;
  std::vector<std::pair<void*, size_t>> queued_;
};

TEST(EngineDeviceTest, DeferredCallsOfACycleCompleteOnlyAfterOneFlush) {
  auto log = std::make_shared<DeferringDevice::Log>();
  BackendSet backends(
      CreateLocalBackend(), "local", nullptr, "",
      [log](int) -> StatusOr<std::unique_ptr<Backend>> {
        return std::unique_ptr<Backend>(new DeferringDevice(log));
      },
      1);
  std::unique_ptr<ControlPlane> control = CreateLocalControlPlane();
  EngineOptions options;
  options.cycle_time = std::chrono::milliseconds(50);  // one cycle for all
  Engine engine(options, &backends, control.get());
  constexpr int kTensors = 6;
  std::vector<std::vector<float>> data(kTensors, std::vector<float>(4, 1.f));
  std::vector<std::pair<Request, void*>> group;
  for (int i = 0; i < kTensors; ++i) {
    Request r;
    r.name = "grad" + std::to_string(i);
    r.count = 4;
    r.device = 0;  // host memory standing in for the GPU's
    group.emplace_back(r, data[i].data());
  }
  std::vector<std::shared_ptr<Completion>> done =
      engine.EnqueueGroup(std::move(group));
  for (int i = 0; i < kTensors; ++i) {
    ASSERT_TRUE(done[i]->Wait().ok());
    // Complete means flushed: the work is in the buffer.
    EXPECT_EQ(data[i], std::vector<float>(4, 2.f)) << i;
  }
  engine.Shutdown();
  std::lock_guard<std::mutex> lock(log->mu);
  // Every tensor ran alone (CUDA tensors do not fuse), all in one flush.
  EXPECT_EQ(log->flushed, std::vector<size_t>{kTensors});
}

TEST(StallInspectorTest, WarnsNamingMissingRanksThenStopsTheJob) {
  StallWarnings warnings;
  auto start = std::chrono::steady_clock::now();
  RunRanks(
      3, 1 << 20,
      [&](Context& ctx, int rank) {
        std::vector<float> x(4);
        // Every rank starts stalling together, however late its context
        // came up on a loaded machine.
        ASSERT_TRUE(ctx.engine()
                        .AllreduceNow(AllreduceRequest("ready", 4), x.data())
                        .ok());
        Request r;
        r.name = "only-rank-0-and-1";
        r.count = 4;
        if (rank == 2) {
          // Rank 2 never submits it; it waits on something else.
          r.name = "only-rank-2";
        }
        Status s = ctx.engine().Enqueue(r, x.data())->Wait();
        EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
        EXPECT_NE(s.message().find("stall inspector"), std::string::npos)
            << s.message();
        EXPECT_NE(s.message().find("'only-rank-0-and-1' (missing ranks: 2)"),
                  std::string::npos)
            << s.message();
      },
      milliseconds(20000), [&](WorkerConfig& c) { warnings.Configure(c); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(15000));
  const std::vector<std::string> said = warnings.said();
  ASSERT_FALSE(said.empty());
  // A warning names each stalled tensor with its missing ranks (a tensor
  // submitted a moment later may first appear in the next warning).
  auto warned = [&](const std::string& part) {
    for (const std::string& w : said) {
      if (w.find(part) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(warned("'only-rank-0-and-1' (missing ranks: 2)")) << said[0];
  EXPECT_TRUE(warned("'only-rank-2' (missing ranks: 0, 1)")) << said[0];
}

}  // namespace
}  // namespace hvd::runtime
