// libhvd: the collective runtime that training programs link.
//
// This is the whole public surface a worker includes. Call hvd::init() once
// before anything else; it joins the job that horovodrun started (or runs
// as a single process of size 1 when started without a launcher) and
// connects every rank to every other over Gloo.
//
// Thread-safety: init() and shutdown() must not race with other calls. The
// asynchronous operations may be submitted from any thread, in any order on
// each rank: a background engine matches them across ranks by name, fuses
// small ones, and completes their handles. The blocking forms wait on
// their handle; they take automatic names, so every rank must call them in
// the same order.
//
// Errors: every call returns hvd::Status. A failed collective (a dead peer,
// a timeout after HOROVOD_GLOO_TIMEOUT_SECONDS) names this rank and the
// operation; the job cannot continue after it, so print it and exit non-zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvd {

// Joins the job. FailedPrecondition when called twice without shutdown().
Status init();
bool is_initialized();

// The assignment of this process. Each returns -1 before init().
int rank();
int size();
int local_rank();
int local_size();
int cross_rank();
int cross_size();
// The GPU this rank should use, or -1 when its host has none.
int gpu();

enum class DataType {
  kUInt8,
  kInt8,
  kInt32,
  kInt64,
  kFloat16,   // IEEE half, as uint16_t bits
  kBFloat16,  // bfloat16, as uint16_t bits
  kFloat32,
  kFloat64,
};

// Average is Sum followed by a 1/size postscale, as in Horovod.
enum class ReduceOp { kAverage, kSum, kMin, kMax, kProduct };

// The completion of an asynchronous operation. Copyable; all copies see
// the same result. A default-constructed handle is invalid.
class Handle {
 public:
  Handle() = default;
  // Blocks until the operation is done; its error names the tensor, the
  // ranks and what to fix.
  Status wait() const;
  // True once done (never blocks).
  bool poll() const;

  struct State;

 private:
  friend Handle MakeHandle(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

// In-place allreduce of `count` elements of `dtype` at `data`, matched
// across ranks by `name`; the buffer must stay valid and untouched until
// the handle is done. `prescale` multiplies the input, `postscale` the
// result. Mismatched dtype, count or op across ranks, and a name already
// in flight, complete the handle with an error.
Handle allreduce_async(const std::string& name, void* data, int64_t count,
                       DataType dtype, ReduceOp op = ReduceOp::kAverage,
                       double prescale = 1.0, double postscale = 1.0);

// Allreduces several tensors as one group (names NAME.0, NAME.1, ...):
// they are submitted together and, when every rank groups them alike, run
// together, fused where they allow. One handle per tensor.
std::vector<Handle> grouped_allreduce_async(const std::string& name,
                                            const std::vector<void*>& data,
                                            const std::vector<int64_t>& counts,
                                            DataType dtype,
                                            ReduceOp op = ReduceOp::kAverage);

// Gathers every rank's `count` elements (counts may differ per rank: the
// first dimension) into `*out`, in rank order. `data` and `out` must stay
// valid until the handle is done.
Handle allgather_async(const std::string& name, const void* data, int64_t count,
                       DataType dtype, std::vector<uint8_t>* out);

// Reduces `count` elements over ranks (Average/Sum/Min/Max/Product) and
// leaves this rank's block in `*out`: the elements split as evenly as
// possible, the first count % size ranks taking one more.
Handle reducescatter_async(const std::string& name, const void* data,
                           int64_t count, DataType dtype,
                           std::vector<uint8_t>* out,
                           ReduceOp op = ReduceOp::kAverage);

// Sends splits[r] consecutive elements of `data` to rank r and gathers what
// every rank sends here into `*out`, in rank order. Splits may differ per
// rank; they must add up to `count`.
Handle alltoall_async(const std::string& name, const void* data, int64_t count,
                      DataType dtype, const std::vector<int64_t>& splits,
                      std::vector<uint8_t>* out);

// In-place broadcast of `count` elements from rank `root`.
Handle broadcast_async(const std::string& name, void* data, int64_t count,
                       DataType dtype, int root);

// Compression of gradients on the wire (fp16 halves the bytes).
enum class Compression { kNone, kFP16 };

// Gradient averaging for a training loop, as Horovod's DistributedOptimizer:
// add every named gradient of a backward pass, then end_pass(). Gradients
// are accumulated locally over `backward_passes_per_step` passes (a batch
// too large for memory runs in pieces), then averaged over ranks in one
// fused exchange. Not thread-safe: one loop owns it.
class DistributedGradients {
 public:
  explicit DistributedGradients(int backward_passes_per_step = 1,
                                Compression compression = Compression::kNone,
                                bool average_aggregated = false);
  ~DistributedGradients();
  DistributedGradients(const DistributedGradients&) = delete;
  DistributedGradients& operator=(const DistributedGradients&) = delete;

  // This pass's gradient; on the step's last pass the average lands here.
  Status add(const std::string& name, float* grad, size_t count);
  // True when the pass completed a step (the optimizer should apply the
  // gradients now), false when it was only accumulated.
  StatusOr<bool> end_pass();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Blocking forms (automatic names: call them in the same order on every
// rank).
Status allreduce(float* data, size_t count, ReduceOp op);
Status allreduce(double* data, size_t count, ReduceOp op);

// Copies `bytes` bytes of rank `root`'s buffer into every rank's buffer.
Status broadcast(void* data, size_t bytes, int root);

// Returns once every rank has called barrier().
Status barrier();

// Closes connections. Safe to call when not initialized.
Status shutdown();

}  // namespace hvd
