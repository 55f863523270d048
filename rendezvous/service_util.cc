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

std::vector<HostSlots> HostsFromProto(
    const google::protobuf::RepeatedPtrField<v1::HostSlots>& hosts) {
  std::vector<HostSlots> out;
  out.reserve(static_cast<size_t>(hosts.size()));
  for (const v1::HostSlots& h : hosts) {
    out.push_back({h.host(), h.slots(), h.gpus()});
  }
  return out;
}

void SetResultStatus(v1::OpResult* result, const Status& s) {
  result->set_code(static_cast<int32_t>(s.code()));
  if (!s.ok()) result->set_message(s.message());
}

std::optional<v1::OpResult> RunImmediateOp(JobTable& table,
                                           const std::string& job_id,
                                           const v1::Op& op) {
  v1::OpResult result;
  result.set_id(op.id());
  switch (op.kind_case()) {
    case v1::Op::kJoin: {
      if (op.join().timeout_ms() > 0) return std::nullopt;
      auto a = table.Join(job_id, op.join().host(), op.join().slot(),
                          op.join().previous_generation());
      if (a.ok()) AssignmentToProto(*a, result.mutable_assignment());
      SetResultStatus(&result, a.status());
      return result;
    }
    case v1::Op::kSet:
      SetResultStatus(&result,
                      table.Set(job_id, op.set().key(), op.set().value()));
      return result;
    case v1::Op::kGet: {
      auto v = table.Get(job_id, op.get().key());
      if (v.ok()) result.set_value(std::move(v).value());
      SetResultStatus(&result, v.status());
      return result;
    }
    case v1::Op::kWait:
    case v1::Op::kBarrier:
      return std::nullopt;
    case v1::Op::KIND_NOT_SET:
      SetResultStatus(&result, Status::InvalidArgument("op", "has no kind"));
      return result;
  }
  return std::nullopt;
}

}  // namespace hvd::rendezvous
