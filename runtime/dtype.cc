#include "runtime/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/multiversion.h"

namespace hvd::runtime {
namespace {

template <typename T, typename Op>
HVD_INLINE void Apply(void* out, const void* a, const void* b, size_t n,
                      Op op) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) o[i] = op(x[i], y[i]);
}

template <typename T>
HVD_INLINE void ApplyOp(ReduceOp op, void* out, const void* a, const void* b,
                        size_t n) {
  switch (op) {
    case ReduceOp::kSum:
      return Apply<T>(out, a, b, n, [](T x, T y) { return T(x + y); });
    case ReduceOp::kMin:
      return Apply<T>(out, a, b, n, [](T x, T y) { return std::min(x, y); });
    case ReduceOp::kMax:
      return Apply<T>(out, a, b, n, [](T x, T y) { return std::max(x, y); });
    case ReduceOp::kProduct:
      return Apply<T>(out, a, b, n, [](T x, T y) { return T(x * y); });
  }
}

// out[i] = (a[i] op b[i]) * f in one pass: the same two roundings as
// ApplyOp then Scale, without a second trip through the buffer.
template <typename T>
HVD_INLINE void ApplyOpScaled(ReduceOp op, void* out, const void* a,
                              const void* b, size_t n, T f) {
  switch (op) {
    case ReduceOp::kSum:
      return Apply<T>(out, a, b, n, [f](T x, T y) { return T(x + y) * f; });
    case ReduceOp::kMin:
      return Apply<T>(out, a, b, n,
                      [f](T x, T y) { return std::min(x, y) * f; });
    case ReduceOp::kMax:
      return Apply<T>(out, a, b, n,
                      [f](T x, T y) { return std::max(x, y) * f; });
    case ReduceOp::kProduct:
      return Apply<T>(out, a, b, n, [f](T x, T y) { return T(x * y) * f; });
  }
}

// 16-bit floats: widen a block to float, reduce, narrow back.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
HVD_INLINE void Apply16(ReduceOp op, void* out, const void* a, const void* b,
                        size_t n) {
  constexpr size_t kBlock = 256;
  float fa[kBlock], fb[kBlock];
  uint16_t* o = static_cast<uint16_t*>(out);
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  for (size_t start = 0; start < n; start += kBlock) {
    size_t m = std::min(kBlock, n - start);
    for (size_t i = 0; i < m; ++i) {
      fa[i] = ToFloat(x[start + i]);
      fb[i] = ToFloat(y[start + i]);
    }
    ApplyOp<float>(op, fa, fa, fb, m);
    for (size_t i = 0; i < m; ++i) o[start + i] = FromFloat(fa[i]);
  }
}

template <typename T>
HVD_INLINE void Scale(void* data, size_t n, double factor) {
  T* p = static_cast<T*>(data);
  if constexpr (std::is_floating_point_v<T>) {
    const T f = static_cast<T>(factor);
    for (size_t i = 0; i < n; ++i) p[i] *= f;
  } else {
    // An average's 1/size: divide, since x * (1/3.0) can land just below
    // the exact quotient and truncate one too low.
    const double inverse = 1.0 / factor;
    const double k = std::round(inverse);
    if (k >= 1 && std::abs(inverse - k) < 1e-9 * k &&
        k <= static_cast<double>(INT64_MAX)) {
      const int64_t d = static_cast<int64_t>(k);
      for (size_t i = 0; i < n; ++i) {
        p[i] = static_cast<T>(static_cast<int64_t>(p[i]) / d);
      }
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      p[i] = static_cast<T>(std::trunc(static_cast<double>(p[i]) * factor));
    }
  }
}

}  // namespace

std::string_view DataTypeName(DataType type) {
  switch (type) {
    case DataType::kUInt8:
      return "uint8";
    case DataType::kInt8:
      return "int8";
    case DataType::kInt16:
      return "int16";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kFloat16:
      return "float16";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
  }
  return "?";
}

std::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kProduct:
      return "product";
  }
  return "?";
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t mant = x & 0x7fffff;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff);
  if (exp == 0xff) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  }
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00);  // overflow
  if (e <= 0) {  // subnormal or zero
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;  // may carry
  return static_cast<uint16_t>(half);
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400));
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) |
          ((mant & 0x3ff) << 13);
    }
  } else if (exp == 0x1f) {
    x = sign | 0x7f800000 | (mant << 13);
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t FloatToBFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000)
    return static_cast<uint16_t>((x >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float BFloat16ToFloat(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

HVD_MULTIVERSION
void ReduceBuffers(DataType type, ReduceOp op, void* out, const void* a,
                   const void* b, size_t n) {
  switch (type) {
    case DataType::kUInt8:
      return ApplyOp<uint8_t>(op, out, a, b, n);
    case DataType::kInt8:
      return ApplyOp<int8_t>(op, out, a, b, n);
    case DataType::kInt16:
      return ApplyOp<int16_t>(op, out, a, b, n);
    case DataType::kInt32:
      return ApplyOp<int32_t>(op, out, a, b, n);
    case DataType::kInt64:
      return ApplyOp<int64_t>(op, out, a, b, n);
    case DataType::kFloat16:
      return Apply16<HalfToFloat, FloatToHalf>(op, out, a, b, n);
    case DataType::kBFloat16:
      return Apply16<BFloat16ToFloat, FloatToBFloat16>(op, out, a, b, n);
    case DataType::kFloat32:
      return ApplyOp<float>(op, out, a, b, n);
    case DataType::kFloat64:
      return ApplyOp<double>(op, out, a, b, n);
  }
}

HVD_MULTIVERSION
void ReduceScaleBuffers(DataType type, ReduceOp op, void* out, const void* a,
                        const void* b, size_t n, double factor) {
  // Most reductions are not scaled: no multiply per element for them.
  if (factor == 1.0) return ReduceBuffers(type, op, out, a, b, n);
  switch (type) {
    case DataType::kFloat32:
      return ApplyOpScaled<float>(op, out, a, b, n, static_cast<float>(factor));
    case DataType::kFloat64:
      return ApplyOpScaled<double>(op, out, a, b, n, factor);
    default:
      // Integers divide (Scale); 16-bit floats scale through double.
      ReduceBuffers(type, op, out, a, b, n);
      ScaleBuffer(type, out, n, factor);
      return;
  }
}

HVD_MULTIVERSION
void ScaleBuffer(DataType type, void* data, size_t n, double factor) {
  switch (type) {
    case DataType::kUInt8:
      return Scale<uint8_t>(data, n, factor);
    case DataType::kInt8:
      return Scale<int8_t>(data, n, factor);
    case DataType::kInt16:
      return Scale<int16_t>(data, n, factor);
    case DataType::kInt32:
      return Scale<int32_t>(data, n, factor);
    case DataType::kInt64:
      return Scale<int64_t>(data, n, factor);
    case DataType::kFloat32:
      return Scale<float>(data, n, factor);
    case DataType::kFloat64:
      return Scale<double>(data, n, factor);
    case DataType::kFloat16:
    case DataType::kBFloat16:
      for (size_t i = 0; i < n; ++i) {
        SetElementFromDouble(type, data, i,
                             ElementAsDouble(type, data, i) * factor);
      }
      return;
  }
}

double ElementAsDouble(DataType type, const void* data, size_t i) {
  switch (type) {
    case DataType::kUInt8:
      return static_cast<const uint8_t*>(data)[i];
    case DataType::kInt8:
      return static_cast<const int8_t*>(data)[i];
    case DataType::kInt16:
      return static_cast<const int16_t*>(data)[i];
    case DataType::kInt32:
      return static_cast<const int32_t*>(data)[i];
    case DataType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    case DataType::kFloat16:
      return HalfToFloat(static_cast<const uint16_t*>(data)[i]);
    case DataType::kBFloat16:
      return BFloat16ToFloat(static_cast<const uint16_t*>(data)[i]);
    case DataType::kFloat32:
      return static_cast<const float*>(data)[i];
    case DataType::kFloat64:
      return static_cast<const double*>(data)[i];
  }
  return 0;
}

void SetElementFromDouble(DataType type, void* data, size_t i, double v) {
  switch (type) {
    case DataType::kUInt8:
      static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(v);
      return;
    case DataType::kInt8:
      static_cast<int8_t*>(data)[i] = static_cast<int8_t>(v);
      return;
    case DataType::kInt16:
      static_cast<int16_t*>(data)[i] = static_cast<int16_t>(v);
      return;
    case DataType::kInt32:
      static_cast<int32_t*>(data)[i] = static_cast<int32_t>(v);
      return;
    case DataType::kInt64:
      static_cast<int64_t*>(data)[i] = static_cast<int64_t>(v);
      return;
    case DataType::kFloat16:
      static_cast<uint16_t*>(data)[i] = FloatToHalf(static_cast<float>(v));
      return;
    case DataType::kBFloat16:
      static_cast<uint16_t*>(data)[i] = FloatToBFloat16(static_cast<float>(v));
      return;
    case DataType::kFloat32:
      static_cast<float*>(data)[i] = static_cast<float>(v);
      return;
    case DataType::kFloat64:
      static_cast<double*>(data)[i] = v;
      return;
  }
}

}  // namespace hvd::runtime
