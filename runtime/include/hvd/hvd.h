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
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hvd/status.h"

namespace hvd {

// Joins the job. Calling it again while initialized does nothing and
// returns Ok (as Horovod does). After shutdown() it joins the job again, in
// a new generation: every rank that calls init() again gets fresh
// connections and shared memory, and nothing of the previous generation is
// reused, so a program may init()/shutdown() any number of times.
Status init();
// The same, with process sets (see below): each list of ranks becomes a set
// (ids 1, 2, ... in order), and with `dynamic_process_sets` (or
// HOROVOD_DYNAMIC_PROCESS_SETS=1) sets may be added and removed later.
Status init(const std::vector<std::vector<int>>& process_sets,
            bool dynamic_process_sets = false);
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
// The NCCL this libhvd was built with, as NCCL_VERSION_CODE (2.28.9:
// 22809), or 0 when it was built without NCCL. Callable before init().
int nccl_built();

enum class DataType {
  kUInt8,
  kInt8,
  kInt32,
  kInt64,
  kFloat16,   // IEEE half, as uint16_t bits
  kBFloat16,  // bfloat16, as uint16_t bits
  kFloat32,
  kFloat64,
  kInt16,  // last: the values travel between ranks; new types go after it
};

// Average is Sum followed by a 1/size postscale, as in Horovod. Adasum
// (allreduce of floating-point host tensors only) combines the ranks'
// gradients by adaptive summation: orthogonal ones add, parallel ones
// average; see Horovod's documentation of hvd.Adasum.
enum class ReduceOp { kAverage, kSum, kMin, kMax, kProduct, kAdasum };

// Where a tensor's memory is: the host, or a CUDA device by index.
inline constexpr int kCPU = -1;

// A view of memory the caller owns (hvd never frees or keeps it past the
// operation): row-major with `shape` (empty: a scalar, one element), on
// `device`. CUDA tensors go to the NCCL backend when libhvd was built with
// it; they take allreduce (scale factors with Sum and Average only),
// grouped allreduce and broadcast.
struct Tensor {
  void* data = nullptr;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  int device = kCPU;

  int64_t num_elements() const;
};

// The result of an operation that sizes its own output (allgather,
// alltoall, reducescatter): host bytes and their shape, filled in when the
// handle completes; alltoall also says how many rows came from each rank.
struct Output {
  std::vector<uint8_t> data;
  std::vector<int64_t> shape;
  std::vector<int64_t> received_splits;  // alltoall only
  // Where the result goes instead of `data` (a framework's own tensor, so
  // nothing is copied after): called once, on libhvd's engine thread or
  // on a thread waiting on some handle (which may run the engine's cycle),
  // with the result's size and shape, before the data arrive; returns host
  // memory of at least `bytes` that stays valid until the handle is done,
  // or null to fail the operation. It must not wait on other operations.
  std::function<void*(size_t bytes, const std::vector<int64_t>& shape)>
      allocate;
};

// The completion of an asynchronous operation. Copyable; all copies see
// the same result. A default-constructed handle is invalid.
class Handle {
 public:
  Handle() = default;
  // Blocks until the operation is done; its error names the tensor, the
  // ranks and what to fix. The waiting thread runs libhvd's cycles itself
  // when no other thread does, so a small operation costs no hand-off
  // between threads.
  Status wait() const;
  // True once done (never blocks).
  bool poll() const;
  // True when the operation was refused when submitted (its arguments, or
  // no job to run in) and never ran; wait() returns why.
  bool refused() const;
  // What the operation returns once done: join's last rank to join; 0
  // for the others.
  int64_t value() const;

  struct State;

 private:
  friend Handle MakeHandle(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

// The asynchronous operations. Each is matched across ranks by `name`
// (any order per rank); the tensor's memory must stay valid and untouched
// until the handle is done. Mismatched dtype, shape, op, root or device
// across ranks, and a name already in flight on this rank, complete the
// handle with an error naming the tensor and ranks. They never block: a
// bad argument completes the handle with the error.

// In-place allreduce. `prescale` multiplies every rank's input and
// `postscale` the result (Average adds a 1/size postscale).
// `process_set` (here and below): the set of ranks that takes part (0, the
// default: every rank); only its members may submit.
Handle allreduce_async(const std::string& name, const Tensor& tensor,
                       ReduceOp op = ReduceOp::kAverage, double prescale = 1.0,
                       double postscale = 1.0, int process_set = 0);
// The same on a flat buffer of `count` elements.
Handle allreduce_async(const std::string& name, void* data, int64_t count,
                       DataType dtype, ReduceOp op = ReduceOp::kAverage,
                       double prescale = 1.0, double postscale = 1.0);

// Allreduces several tensors as one group (names NAME.0, NAME.1, ...):
// they are submitted together and, when every rank groups them alike, run
// together, fused where they allow. One handle per tensor.
std::vector<Handle> grouped_allreduce_async(const std::string& name,
                                            const std::vector<Tensor>& tensors,
                                            ReduceOp op = ReduceOp::kAverage,
                                            double prescale = 1.0,
                                            double postscale = 1.0,
                                            int process_set = 0);
std::vector<Handle> grouped_allreduce_async(const std::string& name,
                                            const std::vector<void*>& data,
                                            const std::vector<int64_t>& counts,
                                            DataType dtype,
                                            ReduceOp op = ReduceOp::kAverage);

// Concatenates every rank's tensor along the first dimension, in rank
// order, into `*out` (host tensors; the first dimension may differ per
// rank, the others must agree).
Handle allgather_async(const std::string& name, const Tensor& tensor,
                       Output* out, int process_set = 0);
Handle allgather_async(const std::string& name, const void* data, int64_t count,
                       DataType dtype, Output* out);

// Reduces over ranks and leaves this rank's block of rows in `*out`: the
// first dimension split as evenly as possible, the first rows % size ranks
// taking one more. The scale factors as allreduce's.
Handle reducescatter_async(const std::string& name, const Tensor& tensor,
                           Output* out, ReduceOp op = ReduceOp::kAverage,
                           double prescale = 1.0, double postscale = 1.0,
                           int process_set = 0);
Handle reducescatter_async(const std::string& name, const void* data,
                           int64_t count, DataType dtype, Output* out,
                           ReduceOp op = ReduceOp::kAverage);

// Sends splits[r] consecutive rows (first-dimension slices) to rank r and
// gathers what every rank sends here into `*out`, in rank order. Splits may
// differ per rank; they must add up to the first dimension.
Handle alltoall_async(const std::string& name, const Tensor& tensor,
                      const std::vector<int64_t>& splits, Output* out,
                      int process_set = 0);
Handle alltoall_async(const std::string& name, const void* data, int64_t count,
                      DataType dtype, const std::vector<int64_t>& splits,
                      Output* out);

// In-place broadcast from rank `root` (a rank of the job, also with a
// process set).
Handle broadcast_async(const std::string& name, const Tensor& tensor, int root,
                       int process_set = 0);
Handle broadcast_async(const std::string& name, void* data, int64_t count,
                       DataType dtype, int root);

// Done once every rank (of the set) has reached a barrier of the same name.
Handle barrier_async(const std::string& name, int process_set = 0);

// This rank has no more data (its input ran out before the others'):
// until every rank has joined, the other ranks' allreduces go on with zeros
// in this rank's place. Done when every rank has joined; value() is the
// last rank to join. Other operations fail while a rank has joined.
Handle join_async();

// Process sets, as Horovod's: collectives among a subset of the job's
// ranks, negotiated among those ranks only, with transports of their own.
// Every rank of the job makes the same add/remove calls in the same order
// (members or not); ids count from 1 (0 is the whole job). Fixed at init()
// unless dynamic; FailedPrecondition otherwise. A set with the same ranks
// as another, or with every rank, is InvalidArgument.
StatusOr<int> add_process_set(const std::vector<int>& ranks);
// Nothing of the set may be in flight.
Status remove_process_set(int process_set);
// The ids (0 first), a set's ranks (sorted; empty if unknown), this rank's
// place in it (-1 when not a member) and its size (-1 if unknown).
std::vector<int> process_set_ids();
std::vector<int> process_set_ranks(int process_set);
int process_set_rank(int process_set);
int process_set_size(int process_set);

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

// Blocking forms: submit, then wait. Those without a name take automatic
// ones, so every rank must call them in the same order.
Status allreduce(const std::string& name, const Tensor& tensor,
                 ReduceOp op = ReduceOp::kAverage, double prescale = 1.0,
                 double postscale = 1.0);
Status allreduce(float* data, size_t count, ReduceOp op);
Status allreduce(double* data, size_t count, ReduceOp op);
Status grouped_allreduce(const std::string& name,
                         const std::vector<Tensor>& tensors,
                         ReduceOp op = ReduceOp::kAverage);
Status allgather(const std::string& name, const Tensor& tensor, Output* out);
Status reducescatter(const std::string& name, const Tensor& tensor, Output* out,
                     ReduceOp op = ReduceOp::kAverage);
Status alltoall(const std::string& name, const Tensor& tensor,
                const std::vector<int64_t>& splits, Output* out);
Status broadcast(const std::string& name, const Tensor& tensor, int root);

// Copies `bytes` bytes of rank `root`'s buffer into every rank's buffer.
Status broadcast(void* data, size_t bytes, int root);

// Returns once every rank has called barrier().
Status barrier();

// Blocks until every rank has joined; returns the last rank to join.
StatusOr<int> join();

// The timeline (a Chrome trace of every tensor's phases, written by rank 0)
// from now on, into `path`, as HOROVOD_TIMELINE does from the start; the
// other ranks return Ok. FailedPrecondition while one is recording.
// stop_timeline() flushes and closes it (Ok when none is recording).
Status start_timeline(const std::string& path, bool mark_cycles = false);
Status stop_timeline();

// A training step ended, for the step-time metric (horovodrun
// --metrics-port, --monitor). DistributedGradients and the Python
// DistributedOptimizer call it at each step; a training loop that
// synchronises otherwise may call it once per step.
void mark_step();

// Where the collectives this thread submits next come from, kept with
// each in the flight recorder and named in its reports ("train.py:88 in
// step"; "" for unknown). Language bindings set it around each submission
// (the Python package: the user's frame).
void set_submission_site(const std::string& site);

// Every thread's stack with each flight recorder dump: on a dump, `signal`
// is raised on the dumping thread, whose handler (Python's faulthandler,
// registered for it) writes the stacks to `fd` from its start; the text
// goes with the dump. `fd` < 0: none (the default).
void set_stack_dump(int fd, int signal);

// Memory that the ranks of a host reduce between directly, in the manner
// of MPI_Alloc_mem: when every rank of a host allreduces a buffer that
// lies in such memory, each rank reduces its share of the elements
// straight from the peers' buffers and writes the result into all of them
// (no copy through a shared segment or the kernel). Other buffers take
// the usual paths. `bytes` of zeroed, page-aligned memory, usable before
// init() and after shutdown(); ResourceExhausted when the system refuses.
StatusOr<void*> alloc_shared(size_t bytes);
// Frees what alloc_shared returned (InvalidArgument for any other
// pointer). The memory must not be in use by a pending operation.
Status free_shared(void* p);

// Stops the engine and releases everything init() made: threads, sockets,
// shared-memory segments, NCCL communicators. Operations still pending on
// other ranks complete with an error saying this rank shut down. Safe to
// call when not initialized, and twice.
Status shutdown();

}  // namespace hvd
