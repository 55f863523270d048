// Element types, reduction operations and the kernels that apply them.
// Pure code; the loops are written so compilers vectorise them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "hvd/hvd.h"

namespace hvd::runtime {

// The public header's, so that a tensor's type crosses into the engine
// without a conversion. Its values travel in negotiation messages: new
// types go last.
using DataType = ::hvd::DataType;
inline constexpr DataType kAllDataTypes[] = {
    DataType::kUInt8,   DataType::kInt8,    DataType::kInt32,
    DataType::kInt64,   DataType::kFloat16, DataType::kBFloat16,
    DataType::kFloat32, DataType::kFloat64, DataType::kInt16};

// Average is not a backend operation: it is Sum followed by a 1/size
// postscale (as in Horovod), done by the caller.
enum class ReduceOp { kSum, kMin, kMax, kProduct };
inline constexpr ReduceOp kAllReduceOps[] = {
    ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

// Inline: every collective asks, some several times.
inline size_t DataTypeSize(DataType type) {
  switch (type) {
    case DataType::kUInt8:
    case DataType::kInt8:
      return 1;
    case DataType::kInt16:
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
    case DataType::kInt32:
    case DataType::kFloat32:
      return 4;
    case DataType::kInt64:
    case DataType::kFloat64:
      return 8;
  }
  return 1;
}

// acc[i] += b[i] for up to 64 fp32 elements (`b` need not be aligned;
// `acc` is), inline: for a blocking allreduce of a few numbers, the
// general reduction's dispatch and vector set-up cost more than the adds.
// The same bits (one IEEE add per element, in the same order). False
// where it does not apply: the caller reduces as usual.
inline bool AddFewFloats(DataType type, ReduceOp op, void* acc, const void* b,
                         int64_t n) {
  if (type != DataType::kFloat32 || op != ReduceOp::kSum || n > 64) {
    return false;
  }
  float* a = static_cast<float*>(acc);
  const char* p = static_cast<const char*>(b);
  for (int64_t i = 0; i < n; ++i) {
    float x;
    std::memcpy(&x, p + i * sizeof(float), sizeof(float));
    a[i] += x;
  }
  return true;
}

std::string_view DataTypeName(DataType type);
std::string_view ReduceOpName(ReduceOp op);

// IEEE half and bfloat16 <-> float, rounding to nearest even.
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
uint16_t FloatToBFloat16(float f);
float BFloat16ToFloat(uint16_t b);

// out[i] = a[i] op b[i] for n elements (out may alias a or b). fp16 and
// bf16 are computed in float and rounded back.
void ReduceBuffers(DataType type, ReduceOp op, void* out, const void* a,
                   const void* b, size_t n);

// ReduceBuffers, then ScaleBuffer of `out` by `factor`, with the same
// results; float32 and float64 in one pass over the buffers.
void ReduceScaleBuffers(DataType type, ReduceOp op, void* out, const void* a,
                        const void* b, size_t n, double factor);

// data[i] *= factor (integers are rounded toward zero, like Horovod's
// integer averages).
void ScaleBuffer(DataType type, void* data, size_t n, double factor);

// Reads element i as double, and writes a double, for tests and scaling.
double ElementAsDouble(DataType type, const void* data, size_t i);
void SetElementFromDouble(DataType type, void* data, size_t i, double v);

}  // namespace hvd::runtime
