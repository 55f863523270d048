// What every rank says of one operation on one named tensor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/dtype.h"

namespace hvd::runtime {

enum class OpType : uint8_t {
  kAllreduce = 0,
  kBroadcast = 1,
  kAllgather = 2,
  kReducescatter = 3,  // count = whole input; rank r keeps block r
  kAlltoall = 4,       // splits[r] elements go to rank r
};

// One operation on one named tensor, as every rank must describe it alike.
struct Request {
  std::string name;
  OpType type = OpType::kAllreduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp reduce = ReduceOp::kSum;
  bool average = false;
  int64_t count = 0;  // elements (allgather: this rank's, may differ)
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t root = 0;
  std::vector<int64_t> splits;  // alltoall: elements sent to each rank
  bool operator==(const Request&) const = default;
};

// "ALLREDUCE", "ALLGATHER", ...: the names of the timeline's phases.
inline const char* OpTypeName(OpType t) {
  switch (t) {
    case OpType::kAllreduce:
      return "ALLREDUCE";
    case OpType::kBroadcast:
      return "BROADCAST";
    case OpType::kAllgather:
      return "ALLGATHER";
    case OpType::kReducescatter:
      return "REDUCESCATTER";
    case OpType::kAlltoall:
      return "ALLTOALL";
  }
  return "?";
}

}  // namespace hvd::runtime
