#include "rendezvous/service_util.h"

#include <algorithm>

namespace hvd::rendezvous {
namespace {

// The longest a client may ask a wait to block: a day is far beyond any
// start-up, and bounds how long a forgotten wait can hold memory.
constexpr int64_t kMaxWaitMs = 24LL * 3600 * 1000;

}  // namespace

std::string Metadata(const grpc::CallbackServerContext* ctx, const char* key) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(key);
  if (it == md.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

StatusOr<Clock::time_point> DeadlineFrom(int64_t timeout_ms) {
  if (timeout_ms <= 0 || timeout_ms > kMaxWaitMs) {
    return Status::InvalidArgument(
        "timeout_ms", "must be between 1 and " + std::to_string(kMaxWaitMs) +
                          " (got " + std::to_string(timeout_ms) + ")");
  }
  return Clock::now() + std::chrono::milliseconds(timeout_ms);
}

void AssignmentToProto(const Assignment& a, v1::Assignment* out) {
  out->set_rank(a.rank);
  out->set_size(a.size);
  out->set_local_rank(a.local_rank);
  out->set_local_size(a.local_size);
  out->set_cross_rank(a.cross_rank);
  out->set_cross_size(a.cross_size);
  out->set_gpu(a.gpu);
  out->set_generation(a.generation);
}

Assignment AssignmentFromProto(const v1::Assignment& a) {
  Assignment out;
  out.rank = a.rank();
  out.size = a.size();
  out.local_rank = a.local_rank();
  out.local_size = a.local_size();
  out.cross_rank = a.cross_rank();
  out.cross_size = a.cross_size();
  out.gpu = a.gpu();
  out.generation = std::max(a.generation(), 1);
  return out;
}

}  // namespace hvd::rendezvous
