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
  kReducescatter = 3,  // count = whole input; rank r keeps row block r
  kAlltoall = 4,       // splits[r] rows (first-dimension slices) to rank r
  kBarrier = 5,        // no data: done once every rank has named it
  kJoin = 6,           // this rank has no more tensors (see Engine)
};

// The name every rank's join travels under.
inline constexpr const char* kJoinName = "hvd.join";

// One operation on one named tensor, as every rank must describe it alike.
struct Request {
  std::string name;
  OpType type = OpType::kAllreduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp reduce = ReduceOp::kSum;
  bool average = false;
  // Adasum is not a backend operation either: the executor combines the
  // ranks' tensors itself (engine/adasum.h) over the backend's collectives.
  // `reduce` is then kSum.
  bool adasum = false;
  int64_t count = 0;  // elements (allgather: this rank's, may differ)
  // Row-major dimensions (their product is count); allgather and alltoall
  // may differ in the first. Empty: one dimension of `count`.
  std::vector<int64_t> shape;
  int32_t device = -1;  // -1: host memory; else the CUDA device index
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t root = 0;
  std::vector<int64_t> splits;  // alltoall: rows sent to each rank
  // The group a grouped allreduce submitted it in ("" when none): with
  // HOROVOD_DISABLE_GROUP_FUSION a group fuses only within itself.
  std::string group;
  bool operator==(const Request&) const = default;
};

// "allreduce", "allgather", ...: the metrics' `op` label.
inline const char* OpMetricName(OpType t) {
  switch (t) {
    case OpType::kAllreduce:
      return "allreduce";
    case OpType::kBroadcast:
      return "broadcast";
    case OpType::kAllgather:
      return "allgather";
    case OpType::kReducescatter:
      return "reducescatter";
    case OpType::kAlltoall:
      return "alltoall";
    case OpType::kBarrier:
      return "barrier";
    case OpType::kJoin:
      return "join";
  }
  return "other";
}

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
    case OpType::kBarrier:
      return "BARRIER";
    case OpType::kJoin:
      return "JOIN";
  }
  return "?";
}

}  // namespace hvd::runtime
