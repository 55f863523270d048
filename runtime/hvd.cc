#include "hvd/hvd.h"

#include <memory>
#include <mutex>

#include "common/logging.h"
#include "runtime/context.h"

namespace hvd {
namespace {

// The one handle the C++ API owns; everything else hangs off it.
std::mutex g_mu;
std::unique_ptr<runtime::Context>
    g_context;  // guarded by g_mu for init/shutdown

runtime::Context* Current() { return g_context.get(); }

Status NotInitialized(const char* what) {
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

Status allreduce(float* data, size_t count, ReduceOp op) {
  runtime::Context* c = Current();
  if (!c) return NotInitialized("hvd::allreduce");
  return c->Allreduce(data, count, runtime::DataType::kFloat32,
                      op == ReduceOp::kAverage);
}

Status allreduce(double* data, size_t count, ReduceOp op) {
  runtime::Context* c = Current();
  if (!c) return NotInitialized("hvd::allreduce");
  return c->Allreduce(data, count, runtime::DataType::kFloat64,
                      op == ReduceOp::kAverage);
}

Status broadcast(void* data, size_t bytes, int root) {
  runtime::Context* c = Current();
  if (!c) return NotInitialized("hvd::broadcast");
  return c->backend().Broadcast(data, bytes, root);
}

Status barrier() {
  runtime::Context* c = Current();
  if (!c) return NotInitialized("hvd::barrier");
  return c->backend().Barrier();
}

Status shutdown() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_context.reset();
  return Status::Ok();
}

}  // namespace hvd
