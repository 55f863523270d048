// The narrow interface every collective backend offers, on raw buffers.
// Backends know nothing about tensors, names or negotiation.
#pragma once

#include <cstddef>

#include "common/status.h"

namespace hvd::runtime {

enum class DataType { kFloat32, kFloat64 };
enum class ReduceKind { kSum };

size_t DataTypeSize(DataType type);

class Backend {
 public:
  virtual ~Backend() = default;
  // In-place reduction of `count` elements across all ranks.
  virtual Status Allreduce(void* data, size_t count, DataType type,
                           ReduceKind kind) = 0;
  virtual Status Broadcast(void* data, size_t bytes, int root) = 0;
  virtual Status Barrier() = 0;
};

}  // namespace hvd::runtime
