// The public API's operations: each a request to the engine of its
// process set (internal::ContextFor), with a handle to wait on; the
// blocking forms submit and wait.
#include <algorithm>
#include <atomic>
#include <memory>

#include "common/equal_bytes.h"
#include "hvd/hvd.h"
#include "runtime/api_context.h"
#include "runtime/context.h"
#include "runtime/gradients.h"
#include "runtime/metrics.h"
#include "runtime/stack_dump.h"
#include "runtime/transport/shm/shm_heap.h"

namespace hvd {

struct Handle::State {
  // In the handle's own allocation: the engine holds it through Shared
  // (one allocation per submission, not two).
  runtime::Completion completion;
  // The engine that runs it (null when refused), and whether submitting
  // woke its thread. Waiting after the engine is gone is safe: its
  // requests all completed when it shut down.
  runtime::Engine* engine = nullptr;
  bool notified = true;

  // The completion as the engine keeps it: sharing the state's ownership.
  static std::shared_ptr<runtime::Completion> Shared(
      const std::shared_ptr<State>& s) {
    return std::shared_ptr<runtime::Completion>(s, &s->completion);
  }
};

Handle MakeHandle(std::shared_ptr<Handle::State> state) {
  Handle h;
  h.state_ = std::move(state);
  return h;
}

Status Handle::wait() const {
  if (!state_) return Status::FailedPrecondition("hvd::Handle", "is invalid");
  if (state_->engine && !state_->completion.done()) {
    return state_->engine->Wait(State::Shared(state_), state_->notified);
  }
  return state_->completion.Wait();
}

bool Handle::poll() const {
  if (!state_ || !state_->completion.done()) return false;
  state_->completion.Collect();  // the caller learnt it is done
  return true;
}

bool Handle::refused() const { return state_ && state_->completion.refused(); }

int64_t Handle::value() const {
  return state_ ? state_->completion.value() : 0;
}

int64_t Tensor::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

Handle Refused(Status why) {
  auto state = std::make_shared<Handle::State>();
  state->completion.Refuse(std::move(why));
  return MakeHandle(state);
}

// Set by the blocking forms around their submission: their wait follows
// at once and runs the cycle itself when it can, so waking the engine
// thread first would only have it compete with the caller for the CPU.
thread_local bool t_wait_follows = false;

Handle Submit(runtime::Request request, void* data, Output* out = nullptr,
              int process_set = 0) {
  StatusOr<runtime::Context*> c =
      internal::ContextFor(process_set, request.name);
  if (!c.ok()) return Refused(c.status());
  auto state = std::make_shared<Handle::State>();
  state->engine = &(*c)->engine();
  state->notified = !t_wait_follows;
  state->engine->Enqueue(std::move(request), data, out, state->notified,
                         Handle::State::Shared(state));
  return MakeHandle(std::move(state));
}

// Submits with `submit` (an asynchronous form) and waits.
template <typename F>
Status SubmitAndWait(F&& submit) {
  t_wait_follows = true;
  Handle h = submit();
  t_wait_follows = false;
  return h.wait();
}

// Average is Sum with a 1/size postscale in the engine; Adasum the
// engine's own combination of sums.
void SetReduceOp(ReduceOp op, runtime::Request& r) {
  r.average = op == ReduceOp::kAverage;
  r.adasum = op == ReduceOp::kAdasum;
  r.reduce = op == ReduceOp::kMin       ? runtime::ReduceOp::kMin
             : op == ReduceOp::kMax     ? runtime::ReduceOp::kMax
             : op == ReduceOp::kProduct ? runtime::ReduceOp::kProduct
                                        : runtime::ReduceOp::kSum;
}

// Automatic names for the blocking forms; every rank counts alike.
std::atomic<uint64_t> g_auto_name{0};

std::string AutoName(const char* op) {
  return std::string("hvd.") + op + "." + std::to_string(g_auto_name++);
}

// Fills a default request `r` for `tensor` (dtype, shape: a scalar is one
// element, device), in the buffers `r` already holds (its name's and its
// shape's).
void FillRequest(const std::string& name, runtime::OpType type,
                 const Tensor& tensor, runtime::Request& r) {
  r.name.assign(name);
  r.type = type;
  r.dtype = tensor.dtype;
  r.count = tensor.num_elements();
  if (tensor.shape.empty()) {
    r.shape.assign(1, 1);
  } else {
    r.shape.assign(tensor.shape.begin(), tensor.shape.end());
  }
  r.device = tensor.device < 0 ? -1 : tensor.device;
}

runtime::Request RequestFor(const std::string& name, runtime::OpType type,
                            const Tensor& tensor) {
  runtime::Request r;
  FillRequest(name, type, tensor, r);
  return r;
}

// The calling thread's blocking allreduce: its request, kept between calls
// with the buffers of its last one (the fast lane then allocates nothing),
// and the stamp of its content for the engine (Engine::AllreduceNow): the
// same while each call asks for the same, a new one from a process-wide
// count whenever anything changed.
struct BlockingAllreduce {
  runtime::Request request;
  ReduceOp op = ReduceOp::kSum;
  uint64_t stamp = 0;

  // Whether the request already says this (every field it is made from).
  bool Same(const std::string& name, const Tensor& tensor, ReduceOp o,
            double prescale, double postscale) const {
    const runtime::Request& r = request;
    // Compared inline (EqualBytes): memcmp calls were 5 % of the call.
    if (stamp == 0 || o != op || r.name.size() != name.size() ||
        !EqualBytes(r.name.data(), name.data(), name.size()) ||
        r.dtype != tensor.dtype || r.prescale != prescale ||
        r.postscale != postscale ||
        r.device != (tensor.device < 0 ? -1 : tensor.device)) {
      return false;
    }
    return tensor.shape.empty()
               ? r.shape.size() == 1 && r.shape[0] == 1
               : r.shape.size() == tensor.shape.size() &&
                     EqualBytes(r.shape.data(), tensor.shape.data(),
                                r.shape.size() * sizeof(int64_t));
  }

  void Fill(const std::string& name, const Tensor& tensor, ReduceOp o,
            double prescale, double postscale) {
    static std::atomic<uint64_t> stamps{0};
    // Field by field: a fresh Request assigned over it would build and
    // free three strings and two vectors.
    static const runtime::Request kDefault;
    runtime::Request& r = request;
    r.root = kDefault.root;
    r.splits.clear();
    r.group.clear();
    FillRequest(name, runtime::OpType::kAllreduce, tensor, r);
    SetReduceOp(o, r);
    r.prescale = prescale;
    r.postscale = postscale;
    op = o;
    stamp = stamps.fetch_add(1, std::memory_order_relaxed) + 1;
  }
};

Tensor Flat(const void* data, int64_t count, DataType dtype) {
  return Tensor{const_cast<void*>(data), dtype, {count}, kCPU};
}

}  // namespace

Handle allreduce_async(const std::string& name, const Tensor& tensor,
                       ReduceOp op, double prescale, double postscale,
                       int process_set) {
  runtime::Request r = RequestFor(name, runtime::OpType::kAllreduce, tensor);
  SetReduceOp(op, r);
  r.prescale = prescale;
  r.postscale = postscale;
  return Submit(std::move(r), tensor.data, nullptr, process_set);
}

Handle allreduce_async(const std::string& name, void* data, int64_t count,
                       DataType dtype, ReduceOp op, double prescale,
                       double postscale) {
  // The request straight from the buffer (no Tensor made and copied on
  // the way: a step submits one per gradient).
  runtime::Request r;
  r.name = name;
  r.type = runtime::OpType::kAllreduce;
  r.dtype = dtype;
  r.count = count;
  // The shape stays empty: one dimension of `count`, which the engine
  // writes into a buffer it keeps.
  SetReduceOp(op, r);
  r.prescale = prescale;
  r.postscale = postscale;
  return Submit(std::move(r), data);
}

std::vector<Handle> grouped_allreduce_async(const std::string& name,
                                            const std::vector<Tensor>& tensors,
                                            ReduceOp op, double prescale,
                                            double postscale, int process_set) {
  std::vector<Handle> handles;
  StatusOr<runtime::Context*> ctx =
      internal::ContextFor(process_set, "grouped_allreduce_async");
  if (!ctx.ok()) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      handles.push_back(Refused(ctx.status()));
    }
    return handles;
  }
  runtime::Context* c = *ctx;
  std::vector<std::pair<runtime::Request, void*>> group;
  std::vector<std::shared_ptr<runtime::Completion>> done;
  for (size_t i = 0; i < tensors.size(); ++i) {
    auto state = std::make_shared<Handle::State>();
    state->engine = &c->engine();
    done.push_back(Handle::State::Shared(state));
    handles.push_back(MakeHandle(std::move(state)));
    runtime::Request r = RequestFor(name + "." + std::to_string(i),
                                    runtime::OpType::kAllreduce, tensors[i]);
    SetReduceOp(op, r);
    r.prescale = prescale;
    r.postscale = postscale;
    r.group = name;
    group.push_back({std::move(r), tensors[i].data});
  }
  c->engine().EnqueueGroup(std::move(group), std::move(done));
  return handles;
}

std::vector<Handle> grouped_allreduce_async(const std::string& name,
                                            const std::vector<void*>& data,
                                            const std::vector<int64_t>& counts,
                                            DataType dtype, ReduceOp op) {
  if (data.size() != counts.size()) {
    std::vector<Handle> handles;
    for (size_t i = 0; i < data.size(); ++i) {
      handles.push_back(Refused(Status::InvalidArgument(
          "hvd::grouped_allreduce_async", "needs one count per tensor")));
    }
    return handles;
  }
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < data.size(); ++i) {
    tensors.push_back(Flat(data[i], counts[i], dtype));
  }
  return grouped_allreduce_async(name, tensors, op);
}

Handle allgather_async(const std::string& name, const Tensor& tensor,
                       Output* out, int process_set) {
  return Submit(RequestFor(name, runtime::OpType::kAllgather, tensor),
                tensor.data, out, process_set);
}

Handle allgather_async(const std::string& name, const void* data, int64_t count,
                       DataType dtype, Output* out) {
  return allgather_async(name, Flat(data, count, dtype), out);
}

Handle reducescatter_async(const std::string& name, const Tensor& tensor,
                           Output* out, ReduceOp op, double prescale,
                           double postscale, int process_set) {
  runtime::Request r =
      RequestFor(name, runtime::OpType::kReducescatter, tensor);
  SetReduceOp(op, r);
  r.prescale = prescale;
  r.postscale = postscale;
  return Submit(std::move(r), tensor.data, out, process_set);
}

Handle reducescatter_async(const std::string& name, const void* data,
                           int64_t count, DataType dtype, Output* out,
                           ReduceOp op) {
  return reducescatter_async(name, Flat(data, count, dtype), out, op);
}

Handle alltoall_async(const std::string& name, const Tensor& tensor,
                      const std::vector<int64_t>& splits, Output* out,
                      int process_set) {
  runtime::Request r = RequestFor(name, runtime::OpType::kAlltoall, tensor);
  r.splits = splits;
  return Submit(std::move(r), tensor.data, out, process_set);
}

Handle alltoall_async(const std::string& name, const void* data, int64_t count,
                      DataType dtype, const std::vector<int64_t>& splits,
                      Output* out) {
  return alltoall_async(name, Flat(data, count, dtype), splits, out);
}

Handle broadcast_async(const std::string& name, const Tensor& tensor, int root,
                       int process_set) {
  runtime::Request r = RequestFor(name, runtime::OpType::kBroadcast, tensor);
  r.root = root;
  if (process_set != 0) {
    // `root` is a rank of the job, as in Horovod; the set's engine counts
    // its members from 0.
    std::vector<int> ranks = process_set_ranks(process_set);
    auto it = std::find(ranks.begin(), ranks.end(), root);
    if (!ranks.empty() && it == ranks.end()) {
      return Refused(Status::InvalidArgument(
          "tensor '" + name + "'",
          "root rank " + std::to_string(root) + " is not in process set " +
              std::to_string(process_set) + " (ranks " +
              internal::RankList(ranks) + ")"));
    }
    if (it != ranks.end()) r.root = static_cast<int>(it - ranks.begin());
  }
  return Submit(std::move(r), tensor.data, nullptr, process_set);
}

Handle broadcast_async(const std::string& name, void* data, int64_t count,
                       DataType dtype, int root) {
  return broadcast_async(name, Flat(data, count, dtype), root);
}

Handle barrier_async(const std::string& name, int process_set) {
  runtime::Request r;
  r.name = name;
  r.type = runtime::OpType::kBarrier;
  return Submit(std::move(r), nullptr, nullptr, process_set);
}

Handle join_async() {
  runtime::Request r;
  r.name = runtime::kJoinName;
  r.type = runtime::OpType::kJoin;
  return Submit(std::move(r), nullptr);
}

struct DistributedGradients::Impl {
  runtime::GradientOptions options;
  std::unique_ptr<runtime::GradientReducer> reducer;  // on first use
};

DistributedGradients::DistributedGradients(int backward_passes_per_step,
                                           Compression compression,
                                           bool average_aggregated)
    : impl_(std::make_unique<Impl>()) {
  impl_->options.backward_passes_per_step = backward_passes_per_step;
  impl_->options.compression = compression == Compression::kFP16
                                   ? runtime::Compression::kFP16
                                   : runtime::Compression::kNone;
  impl_->options.average_aggregated = average_aggregated;
}

DistributedGradients::~DistributedGradients() = default;

Status DistributedGradients::add(const std::string& name, float* grad,
                                 size_t count) {
  if (!impl_->reducer) {
    HVD_ASSIGN_OR_RETURN(runtime::Context * c,
                         internal::ContextFor(0, "DistributedGradients"));
    impl_->reducer = std::make_unique<runtime::GradientReducer>(&c->engine(),
                                                                impl_->options);
  }
  return impl_->reducer->Add(name, grad, count);
}

StatusOr<bool> DistributedGradients::end_pass() {
  if (!impl_->reducer) {
    return Status::FailedPrecondition("hvd::DistributedGradients",
                                      "end_pass() before any add()");
  }
  HVD_ASSIGN_OR_RETURN(bool stepped, impl_->reducer->EndPass());
  if (stepped) mark_step();
  return stepped;
}

void mark_step() { runtime::Metrics::Process().Step(); }

void set_submission_site(const std::string& site) {
  runtime::FlightRecorder::SetThreadSite(site);
}

void set_stack_dump(int fd, int signal) { runtime::SetStackDump(fd, signal); }

StatusOr<void*> alloc_shared(size_t bytes) {
  return runtime::ShmHeap::Process().Allocate(bytes);
}

Status free_shared(void* p) { return runtime::ShmHeap::Process().Free(p); }

Status allreduce(const std::string& name, const Tensor& tensor, ReduceOp op,
                 double prescale, double postscale) {
  StatusOr<runtime::Context*> c = internal::ContextFor(0, name);
  if (!c.ok()) return c.status();
  thread_local BlockingAllreduce b;
  if (!b.Same(name, tensor, op, prescale, postscale)) {
    b.Fill(name, tensor, op, prescale, postscale);
  }
  // A blocking allreduce may take the engine's fast lane.
  return (*c)->engine().AllreduceNow(b.request, tensor.data, b.stamp);
}

Status allreduce(float* data, size_t count, ReduceOp op) {
  return SubmitAndWait([&] {
    return allreduce_async(AutoName("allreduce"), data,
                           static_cast<int64_t>(count), DataType::kFloat32, op);
  });
}

Status allreduce(double* data, size_t count, ReduceOp op) {
  return SubmitAndWait([&] {
    return allreduce_async(AutoName("allreduce"), data,
                           static_cast<int64_t>(count), DataType::kFloat64, op);
  });
}

Status grouped_allreduce(const std::string& name,
                         const std::vector<Tensor>& tensors, ReduceOp op) {
  Status first;
  for (const Handle& h : grouped_allreduce_async(name, tensors, op)) {
    first.Update(h.wait());
  }
  return first;
}

Status allgather(const std::string& name, const Tensor& tensor, Output* out) {
  return SubmitAndWait([&] { return allgather_async(name, tensor, out); });
}

Status reducescatter(const std::string& name, const Tensor& tensor, Output* out,
                     ReduceOp op) {
  return SubmitAndWait(
      [&] { return reducescatter_async(name, tensor, out, op); });
}

Status alltoall(const std::string& name, const Tensor& tensor,
                const std::vector<int64_t>& splits, Output* out) {
  return SubmitAndWait(
      [&] { return alltoall_async(name, tensor, splits, out); });
}

Status broadcast(const std::string& name, const Tensor& tensor, int root) {
  return SubmitAndWait([&] { return broadcast_async(name, tensor, root); });
}

Status broadcast(void* data, size_t bytes, int root) {
  return SubmitAndWait([&] {
    return broadcast_async(AutoName("broadcast"), data,
                           static_cast<int64_t>(bytes), DataType::kUInt8, root);
  });
}

Status barrier() {
  return SubmitAndWait([] { return barrier_async(AutoName("barrier")); });
}

StatusOr<int> join() {
  Handle h = join_async();
  HVD_RETURN_IF_ERROR(h.wait());
  return static_cast<int>(h.value());
}

}  // namespace hvd
