#include "runtime/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace hvd::runtime {
namespace {

TEST(HalfTest, RoundTripsExactValues) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f, 1024.0f}) {
    EXPECT_EQ(HalfToFloat(FloatToHalf(f)), f) << f;
  }
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_TRUE(std::isinf(HalfToFloat(FloatToHalf(1e6f))));
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
  // Subnormals and round-to-nearest-even.
  EXPECT_EQ(HalfToFloat(FloatToHalf(5.960464477539063e-08f)),
            5.960464477539063e-08f);
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3c00);  // tie -> even
  EXPECT_EQ(FloatToHalf(1.0f + 3.0f / 2048), 0x3c02);  // tie -> even (up)
}

TEST(BFloat16Test, RoundTripsAndRounds) {
  for (float f : {0.0f, 1.0f, -3.0f, 256.0f, std::ldexp(1.0f, 100)}) {
    EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(f)), f) << f;
  }
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(std::nanf("")))));
}

TEST(ReduceBuffersTest, EveryTypeAndOp) {
  for (DataType t : kAllDataTypes) {
    for (ReduceOp op : kAllReduceOps) {
      const size_t n = 1000;  // over a block of the 16-bit path
      std::vector<uint8_t> a(n * DataTypeSize(t)), b(a.size()), out(a.size());
      for (size_t i = 0; i < n; ++i) {
        SetElementFromDouble(t, a.data(), i, 1 + i % 5);
        SetElementFromDouble(t, b.data(), i, 1 + (i * 7) % 3);
      }
      ReduceBuffers(t, op, out.data(), a.data(), b.data(), n);
      for (size_t i = 0; i < n; ++i) {
        double x = 1 + i % 5, y = 1 + (i * 7) % 3;
        double want = op == ReduceOp::kSum   ? x + y
                      : op == ReduceOp::kMin ? std::min(x, y)
                      : op == ReduceOp::kMax ? std::max(x, y)
                                             : x * y;
        ASSERT_EQ(ElementAsDouble(t, out.data(), i), want)
            << DataTypeName(t) << " " << ReduceOpName(op) << " at " << i;
      }
    }
  }
}

// The one-pass reduce-and-scale gives the bits of the two passes, for
// every type and op, in place (out aliasing a) and not, with scale factors
// whose products round (1/3, 1/7) and none (1).
// The inline sum of a few floats gives ReduceBuffers' bits, from an
// unaligned source, and declines every other case.
TEST(AddFewFloatsTest, SameBitsAsReduceBuffersAndOnlyForAFewFloats) {
  for (int64_t n : {0, 1, 3, 16, 64}) {
    std::vector<float> a(n), b(n), want(n);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = 1.0f / static_cast<float>(i + 3);
      b[i] = -0.7f * static_cast<float>(i) + 1e-3f;
    }
    ReduceBuffers(DataType::kFloat32, ReduceOp::kSum, want.data(), a.data(),
                  b.data(), n);
    // b one byte past an aligned address.
    std::vector<char> raw(n * sizeof(float) + 1);
    if (n > 0) std::memcpy(raw.data() + 1, b.data(), n * sizeof(float));
    ASSERT_TRUE(AddFewFloats(DataType::kFloat32, ReduceOp::kSum, a.data(),
                             raw.data() + 1, n));
    EXPECT_EQ(std::memcmp(a.data(), want.data(), n * sizeof(float)), 0) << n;
  }
  std::vector<float> a(65), b(65);
  EXPECT_FALSE(
      AddFewFloats(DataType::kFloat32, ReduceOp::kSum, a.data(), b.data(), 65));
  EXPECT_FALSE(
      AddFewFloats(DataType::kFloat32, ReduceOp::kMax, a.data(), b.data(), 4));
  EXPECT_FALSE(
      AddFewFloats(DataType::kFloat64, ReduceOp::kSum, a.data(), b.data(), 2));
}

TEST(ReduceScaleBuffersTest, SameBitsAsReduceThenScale) {
  for (DataType t : kAllDataTypes) {
    for (ReduceOp op : kAllReduceOps) {
      for (double factor : {1.0, 1.0 / 3, 1.0 / 7, 2.5}) {
        const size_t n = 600, bytes = n * DataTypeSize(t);
        std::vector<uint8_t> a(bytes), b(bytes), want(bytes), got(bytes);
        for (size_t i = 0; i < n; ++i) {
          SetElementFromDouble(t, a.data(), i, 0.37 * (i % 11) + 1);
          SetElementFromDouble(t, b.data(), i, 1.91 * (i % 7) - 3);
        }
        ReduceBuffers(t, op, want.data(), a.data(), b.data(), n);
        ScaleBuffer(t, want.data(), n, factor);
        ReduceScaleBuffers(t, op, got.data(), a.data(), b.data(), n, factor);
        ASSERT_EQ(got, want)
            << DataTypeName(t) << " " << ReduceOpName(op) << " x" << factor;
        ReduceScaleBuffers(t, op, a.data(), a.data(), b.data(), n, factor);
        ASSERT_EQ(a, want) << "in place: " << DataTypeName(t) << " "
                           << ReduceOpName(op) << " x" << factor;
      }
    }
  }
}

TEST(ScaleBufferTest, FloatsScaleIntegersTruncate) {
  std::vector<float> f = {2, 4};
  ScaleBuffer(DataType::kFloat32, f.data(), 2, 0.5);
  EXPECT_EQ(f, (std::vector<float>{1, 2}));
  std::vector<int32_t> i = {7, -7};
  ScaleBuffer(DataType::kInt32, i.data(), 2, 0.5);
  EXPECT_EQ(i, (std::vector<int32_t>{3, -3}));
  std::vector<uint16_t> h = {FloatToHalf(3.0f)};
  ScaleBuffer(DataType::kFloat16, h.data(), 1, 2.0);
  EXPECT_EQ(HalfToFloat(h[0]), 6.0f);
}

// An integer average is the exact quotient, truncated: 1/size in floating
// point must not make 6/3 come out as 1.
TEST(ScaleBufferTest, IntegerAverageIsTheExactQuotient) {
  for (int64_t k = 1; k <= 64; ++k) {
    std::vector<int64_t> v;
    for (int64_t x = -300; x <= 300; ++x) v.push_back(x * 7);
    std::vector<int64_t> want;
    for (int64_t x : v) want.push_back(x / k);
    ScaleBuffer(DataType::kInt64, v.data(), v.size(),
                1.0 / static_cast<double>(k));
    ASSERT_EQ(v, want) << "size " << k;
    std::vector<int16_t> s = {static_cast<int16_t>(3 * k), -5};
    ScaleBuffer(DataType::kInt16, s.data(), s.size(),
                1.0 / static_cast<double>(k));
    EXPECT_EQ(s[0], 3) << k;
    EXPECT_EQ(s[1], static_cast<int16_t>(-5 / k)) << k;
  }
}

}  // namespace
}  // namespace hvd::runtime
