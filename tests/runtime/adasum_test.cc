// Adasum: the pairwise formula on vectors whose answer is known, and the
// halving algorithm against a plain tree of pairwise combinations at 2 to
// 8 ranks (powers of two and not), on Gloo and on shared memory, straight
// on the backend and through the engine (fused tensors, scale factors,
// 16-bit floats), and what the engine refuses.
#include "runtime/engine/adasum.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/context.h"
#include "runtime/engine/engine.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

using Vec = std::vector<double>;

// adasum(a, b) written out from its definition, independent of the code
// under test.
Vec Pair(const Vec& a, const Vec& b) {
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  const double floor = std::sqrt(DBL_MIN);
  const double ca = aa >= floor ? 1 - dot / (2 * aa) : 1;
  const double cb = bb >= floor ? 1 - dot / (2 * bb) : 1;
  Vec out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = ca * a[i] + cb * b[i];
  return out;
}

// The tree the algorithm promises (adasum.h): rank q + i folds into rank
// i, then pairs at distance 1, 2, 4, ...
Vec Tree(std::vector<Vec> g) {
  const int p = static_cast<int>(g.size());
  int q = 1;
  while (q * 2 <= p) q *= 2;
  for (int i = 0; i + q < p; ++i) g[i] = Pair(g[i], g[q + i]);
  for (int d = 1; d < q; d *= 2) {
    for (int i = 0; i < q; i += 2 * d) g[i] = Pair(g[i], g[i + d]);
  }
  return g[0];
}

// A rank's gradient: values in [-1, 1), different per rank and element.
double Grad(int rank, size_t tensor, size_t i) {
  uint64_t x = (rank + 1) * 0x9E3779B97F4A7C15ULL ^ (tensor + 7) * 1000003 ^
               (i + 1) * 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBULL;
  x ^= x >> 29;
  return static_cast<double>(x % 20000) / 10000.0 - 1.0;
}

TEST(AdasumCoefficientsTest, OrthogonalAddParallelAverageZeroKeepsTheOther) {
  AdasumWeights w = AdasumCoefficients(0, 4, 9);
  EXPECT_EQ(w.a, 1.0);
  EXPECT_EQ(w.b, 1.0);
  // a = b: a.b = |a|^2, each weighs one half.
  w = AdasumCoefficients(5, 5, 5);
  EXPECT_EQ(w.a, 0.5);
  EXPECT_EQ(w.b, 0.5);
  // a = (1, 0), b = (1, 1): a.b = 1, |a|^2 = 1, |b|^2 = 2.
  w = AdasumCoefficients(1, 1, 2);
  EXPECT_EQ(w.a, 0.5);
  EXPECT_EQ(w.b, 0.75);
  // A vector under the floor, sqrt(DBL_MIN) as Horovod's, keeps weight 1.
  w = AdasumCoefficients(0, 0, 3);
  EXPECT_EQ(w.a, 1.0);
  EXPECT_EQ(w.b, 1.0);
  w = AdasumCoefficients(0, 1e-160, 3);
  EXPECT_EQ(w.a, 1.0);
  // Small gradients above it combine as any others: two equal vectors of
  // squared norm 1e-12 average, and one of 5e-9 weighs 1 - 1e-9 / 1e-8.
  w = AdasumCoefficients(1e-12, 1e-12, 1e-12);
  EXPECT_EQ(w.a, 0.5);
  EXPECT_EQ(w.b, 0.5);
  w = AdasumCoefficients(1e-9, 5e-9, 2);
  EXPECT_DOUBLE_EQ(w.a, 0.9);
}

TEST(AdasumTest, EveryRankEndsWithAPartAndThePartsTileTheBuffer) {
  for (int size : {1, 2, 3, 4, 5, 6, 7, 8}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{100}}) {
      Adasum a(0, size);
      std::vector<int> owner(n, -1);
      for (int r = 0; r < size; ++r) {
        Adasum::Range part = a.Final(r, n);
        for (size_t i = part.begin; i < part.end; ++i) {
          ASSERT_EQ(owner[i], -1) << "size " << size << " n " << n;
          owner[i] = r;
        }
      }
      for (size_t i = 0; i < n; ++i) {
        ASSERT_NE(owner[i], -1) << "size " << size << " n " << n << " i " << i;
      }
    }
  }
}

const char* g_backend = "shm";

class AdasumRanksTest
    : public ::testing::TestWithParam<std::tuple<int, const char*>> {
 protected:
  void SetUp() override { g_backend = std::get<1>(GetParam()); }
  void Run(const std::function<void(Context&, int)>& body) {
    RunRanks(std::get<0>(GetParam()), body,
             [](WorkerConfig& c) { c.shm = std::string(g_backend) != "gloo"; });
  }
};

// Known answers: orthogonal gradients sum, equal ones stay as they are.
TEST_P(AdasumRanksTest, OrthogonalGradientsSumEqualOnesAverage) {
  const int size = std::get<0>(GetParam());
  Run([&](Context& ctx, int rank) {
    Adasum adasum(rank, size);
    std::vector<float> one_hot(size, 0.0f);
    one_hot[rank] = 2.0f;
    std::vector<float> same = {1.5f, -2.0f, 0.25f};
    Status s = adasum.Allreduce(ctx.backend(), one_hot.data(),
                                DataType::kFloat32, {one_hot.size()});
    ASSERT_TRUE(s.ok()) << s.ToString();
    s = adasum.Allreduce(ctx.backend(), same.data(), DataType::kFloat32,
                         {same.size()});
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (int r = 0; r < size; ++r) EXPECT_EQ(one_hot[r], 2.0f) << r;
    EXPECT_EQ(same, (std::vector<float>{1.5f, -2.0f, 0.25f}));
  });
}

// Several tensors in one buffer, each combined as if alone; every rank
// ends with the same bits.
TEST_P(AdasumRanksTest, FusedTensorsMatchThePairwiseTree) {
  const int size = std::get<0>(GetParam());
  const std::vector<size_t> counts = {5, 0, 17, 1, 33, 2};
  std::vector<std::vector<double>> results(size);
  Run([&](Context& ctx, int rank) {
    Adasum adasum(rank, size);
    std::vector<double> buf;
    for (size_t t = 0; t < counts.size(); ++t) {
      for (size_t i = 0; i < counts[t]; ++i) buf.push_back(Grad(rank, t, i));
    }
    Status s =
        adasum.Allreduce(ctx.backend(), buf.data(), DataType::kFloat64, counts);
    ASSERT_TRUE(s.ok()) << s.ToString();
    results[rank] = buf;
  });
  size_t at = 0;
  for (size_t t = 0; t < counts.size(); ++t) {
    std::vector<Vec> g(size);
    for (int r = 0; r < size; ++r) {
      for (size_t i = 0; i < counts[t]; ++i) g[r].push_back(Grad(r, t, i));
    }
    Vec want = Tree(g);
    for (size_t i = 0; i < counts[t]; ++i) {
      ASSERT_NEAR(results[0][at + i], want[i], 1e-12)
          << "tensor " << t << " element " << i;
    }
    at += counts[t];
  }
  for (int r = 1; r < size; ++r) {
    ASSERT_EQ(std::memcmp(results[r].data(), results[0].data(),
                          results[0].size() * sizeof(double)),
              0)
        << "rank " << r << " differs from rank 0";
  }
}

// Through the engine: tensors submitted together fuse; scale factors apply
// before and after; float32 and float16 in one run.
TEST_P(AdasumRanksTest, EngineAllreduceWithScaleFactors) {
  const int size = std::get<0>(GetParam());
  const std::vector<size_t> counts = {3, 40, 9};
  Run([&](Context& ctx, int rank) {
    struct T {
      Request r;
      std::vector<uint8_t> buf;
      std::shared_ptr<Completion> done;
    };
    std::vector<T> all;
    for (DataType type : {DataType::kFloat32, DataType::kFloat16}) {
      for (size_t t = 0; t < counts.size(); ++t) {
        T x;
        x.r.name = std::string(DataTypeName(type)) + "." + std::to_string(t);
        x.r.dtype = type;
        x.r.count = static_cast<int64_t>(counts[t]);
        x.r.adasum = true;
        x.r.prescale = 0.5;
        x.r.postscale = 3.0;
        x.buf.resize(counts[t] * DataTypeSize(type));
        for (size_t i = 0; i < counts[t]; ++i) {
          SetElementFromDouble(type, x.buf.data(), i, Grad(rank, t, i));
        }
        all.push_back(std::move(x));
      }
    }
    for (T& x : all) x.done = ctx.engine().Enqueue(x.r, x.buf.data());
    for (T& x : all) {
      Status s = x.done->Wait();
      ASSERT_TRUE(s.ok()) << x.r.name << ": " << s.ToString();
      const size_t t = &x - all.data();
      const size_t tensor = t % counts.size();
      std::vector<Vec> g(size);
      for (int r = 0; r < size; ++r) {
        for (size_t i = 0; i < counts[tensor]; ++i) {
          // What the rank sent, as its type holds it, prescaled.
          std::vector<uint8_t> one(DataTypeSize(x.r.dtype));
          SetElementFromDouble(x.r.dtype, one.data(), 0, Grad(r, tensor, i));
          g[r].push_back(0.5 * ElementAsDouble(x.r.dtype, one.data(), 0));
        }
      }
      Vec want = Tree(g);
      const double tol = x.r.dtype == DataType::kFloat16 ? 2e-2 : 1e-5;
      for (size_t i = 0; i < counts[tensor]; ++i) {
        ASSERT_NEAR(ElementAsDouble(x.r.dtype, x.buf.data(), i), 3.0 * want[i],
                    tol * std::max(1.0, std::abs(3.0 * want[i])))
            << x.r.name << " element " << i << " rank " << rank;
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(WorldSizesAndBackends, AdasumRanksTest,
                         ::testing::Combine(::testing::Values(2, 3, 4, 5, 8),
                                            ::testing::Values("gloo", "shm")),
                         [](const auto& info) {
                           return "np" +
                                  std::to_string(std::get<0>(info.param)) +
                                  "_" + std::get<1>(info.param);
                         });

TEST(AdasumEngineTest, RefusesWhatItCannotCombine) {
  RunRanks(1, [&](Context& ctx, int) {
    std::vector<int32_t> ints = {1, 2};
    Request r;
    r.name = "ints";
    r.dtype = DataType::kInt32;
    r.count = 2;
    r.adasum = true;
    Status s = ctx.engine().Enqueue(r, ints.data())->Wait();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.ToString().find("Adasum takes float16, bfloat16, float32"),
              std::string::npos)
        << s.ToString();
    std::vector<float> in = {1, 2};
    Output out;
    r.name = "scatter";
    r.type = OpType::kReducescatter;
    r.dtype = DataType::kFloat32;
    r.shape = {2};
    s = ctx.engine().Enqueue(r, in.data(), &out)->Wait();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.ToString().find("Adasum is an allreduce operation"),
              std::string::npos)
        << s.ToString();
  });
}

}  // namespace
}  // namespace hvd::runtime
