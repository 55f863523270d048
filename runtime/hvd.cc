#include "hvd/hvd.h"

#include <atomic>
#include <memory>
#include <mutex>

#include "common/logging.h"
#include "runtime/context.h"
#include "runtime/gradients.h"

namespace hvd {
namespace {

// The one handle the C++ API owns; everything else hangs off it.
std::mutex g_mu;
std::unique_ptr<runtime::Context>
    g_context;  // guarded by g_mu for init/shutdown

runtime::Context* Current() { return g_context.get(); }

Status NotInitialized(const std::string& what) {
  return Status::FailedPrecondition(what, "call hvd::init() first");
}

}  // namespace

Status init() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_context) {
    return Status::FailedPrecondition(
        "hvd::init", "already initialized; call shutdown() first");
  }
  HVD_RETURN_IF_ERROR(ConfigureLoggingFromEnv());
  HVD_ASSIGN_OR_RETURN(runtime::WorkerConfig config,
                       runtime::WorkerConfig::FromEnv());
  HVD_ASSIGN_OR_RETURN(g_context, runtime::Context::Create(config));
  SetLogPrefix("rank " + std::to_string(g_context->assignment().rank));
  HVD_LOG(Debug) << "joined as rank " << g_context->assignment().rank << " of "
                 << g_context->assignment().size;
  return Status::Ok();
}

bool is_initialized() { return Current() != nullptr; }

#define HVD_ASSIGNMENT_GETTER(name)       \
  int name() {                            \
    runtime::Context* c = Current();      \
    return c ? c->assignment().name : -1; \
  }
HVD_ASSIGNMENT_GETTER(rank)
HVD_ASSIGNMENT_GETTER(size)
HVD_ASSIGNMENT_GETTER(local_rank)
HVD_ASSIGNMENT_GETTER(local_size)
HVD_ASSIGNMENT_GETTER(cross_rank)
HVD_ASSIGNMENT_GETTER(cross_size)
HVD_ASSIGNMENT_GETTER(gpu)
#undef HVD_ASSIGNMENT_GETTER

struct Handle::State {
  std::shared_ptr<runtime::Completion> completion;
};

Handle MakeHandle(std::shared_ptr<Handle::State> state) {
  Handle h;
  h.state_ = std::move(state);
  return h;
}

Status Handle::wait() const {
  if (!state_) return Status::FailedPrecondition("hvd::Handle", "is invalid");
  return state_->completion->Wait();
}

bool Handle::poll() const { return state_ && state_->completion->done(); }

namespace {

Handle Submit(runtime::Request request, void* data,
              std::vector<uint8_t>* gathered = nullptr) {
  runtime::Context* c = Current();
  auto state = std::make_shared<Handle::State>();
  if (!c) {
    state->completion = std::make_shared<runtime::Completion>();
    state->completion->Set(NotInitialized("hvd::" + request.name));
    return MakeHandle(state);
  }
  state->completion = c->engine().Enqueue(std::move(request), data, gathered);
  return MakeHandle(state);
}

runtime::DataType ToRuntime(DataType t) {
  return static_cast<runtime::DataType>(static_cast<int>(t));
}

// Average is Sum with a 1/size postscale in the engine.
void SetReduceOp(ReduceOp op, runtime::Request& r) {
  r.average = op == ReduceOp::kAverage;
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

}  // namespace

Handle allreduce_async(const std::string& name, void* data, int64_t count,
                       DataType dtype, ReduceOp op, double prescale,
                       double postscale) {
  runtime::Request r;
  r.name = name;
  r.type = runtime::OpType::kAllreduce;
  r.dtype = ToRuntime(dtype);
  SetReduceOp(op, r);
  r.count = count;
  r.prescale = prescale;
  r.postscale = postscale;
  return Submit(std::move(r), data);
}

std::vector<Handle> grouped_allreduce_async(const std::string& name,
                                            const std::vector<void*>& data,
                                            const std::vector<int64_t>& counts,
                                            DataType dtype, ReduceOp op) {
  std::vector<Handle> handles;
  runtime::Context* c = Current();
  if (!c || data.size() != counts.size()) {
    Status why = !c ? NotInitialized("hvd::grouped_allreduce_async")
                    : Status::InvalidArgument("hvd::grouped_allreduce_async",
                                              "needs one count per tensor");
    for (size_t i = 0; i < data.size(); ++i) {
      auto state = std::make_shared<Handle::State>();
      state->completion = std::make_shared<runtime::Completion>();
      state->completion->Set(why);
      handles.push_back(MakeHandle(state));
    }
    return handles;
  }
  std::vector<std::pair<runtime::Request, void*>> group;
  for (size_t i = 0; i < data.size(); ++i) {
    runtime::Request r;
    r.name = name + "." + std::to_string(i);
    r.dtype = ToRuntime(dtype);
    SetReduceOp(op, r);
    r.count = counts[i];
    group.push_back({std::move(r), data[i]});
  }
  for (auto& done : c->engine().EnqueueGroup(std::move(group))) {
    auto state = std::make_shared<Handle::State>();
    state->completion = std::move(done);
    handles.push_back(MakeHandle(state));
  }
  return handles;
}

Handle allgather_async(const std::string& name, const void* data, int64_t count,
                       DataType dtype, std::vector<uint8_t>* out) {
  runtime::Request r;
  r.name = name;
  r.type = runtime::OpType::kAllgather;
  r.dtype = ToRuntime(dtype);
  r.count = count;
  return Submit(std::move(r), const_cast<void*>(data), out);
}

Handle reducescatter_async(const std::string& name, const void* data,
                           int64_t count, DataType dtype,
                           std::vector<uint8_t>* out, ReduceOp op) {
  runtime::Request r;
  r.name = name;
  r.type = runtime::OpType::kReducescatter;
  r.dtype = ToRuntime(dtype);
  r.count = count;
  SetReduceOp(op, r);
  return Submit(std::move(r), const_cast<void*>(data), out);
}

Handle alltoall_async(const std::string& name, const void* data, int64_t count,
                      DataType dtype, const std::vector<int64_t>& splits,
                      std::vector<uint8_t>* out) {
  runtime::Request r;
  r.name = name;
  r.type = runtime::OpType::kAlltoall;
  r.dtype = ToRuntime(dtype);
  r.count = count;
  r.splits = splits;
  return Submit(std::move(r), const_cast<void*>(data), out);
}

Handle broadcast_async(const std::string& name, void* data, int64_t count,
                       DataType dtype, int root) {
  runtime::Request r;
  r.name = name;
  r.type = runtime::OpType::kBroadcast;
  r.dtype = ToRuntime(dtype);
  r.count = count;
  r.root = root;
  return Submit(std::move(r), data);
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
    runtime::Context* c = Current();
    if (!c) return NotInitialized("hvd::DistributedGradients");
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
  return impl_->reducer->EndPass();
}

Status allreduce(float* data, size_t count, ReduceOp op) {
  return allreduce_async(AutoName("allreduce"), data,
                         static_cast<int64_t>(count), DataType::kFloat32, op)
      .wait();
}

Status allreduce(double* data, size_t count, ReduceOp op) {
  return allreduce_async(AutoName("allreduce"), data,
                         static_cast<int64_t>(count), DataType::kFloat64, op)
      .wait();
}

Status broadcast(void* data, size_t bytes, int root) {
  return broadcast_async(AutoName("broadcast"), data,
                         static_cast<int64_t>(bytes), DataType::kUInt8, root)
      .wait();
}

// A tensor of no elements completes once every rank has named it: the
// negotiation is the barrier.
Status barrier() {
  return allreduce_async(AutoName("barrier"), nullptr, 0, DataType::kUInt8,
                         ReduceOp::kSum)
      .wait();
}

Status shutdown() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_context.reset();
  return Status::Ok();
}

}  // namespace hvd
