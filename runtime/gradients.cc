#include "runtime/gradients.h"

namespace hvd::runtime {

GradientReducer::GradientReducer(Engine* engine, GradientOptions options)
    : engine_(engine), options_(options) {}

Status GradientReducer::Add(const std::string& name, float* grad,
                            size_t count) {
  if (options_.backward_passes_per_step < 1) {
    return Status::InvalidArgument("backward_passes_per_step",
                                   "must be at least 1");
  }
  Slot& slot = slots_[name];
  if (slot.sum.empty()) {
    // First pass of the step (or a gradient first seen in a later pass:
    // the earlier passes contributed zeros).
    slot.sum.assign(count, 0.0f);
  } else if (slot.sum.size() != count) {
    return Status::InvalidArgument(
        "gradient '" + name + "'",
        "has " + std::to_string(count) + " elements in this pass but " +
            std::to_string(slot.sum.size()) + " before");
  }
  for (size_t i = 0; i < count; ++i) slot.sum[i] += grad[i];
  slot.out = grad;
  return Status::Ok();
}

StatusOr<bool> GradientReducer::EndPass() {
  if (++passes_ < options_.backward_passes_per_step) return false;
  passes_ = 0;
  const float pass_scale = options_.average_aggregated
                               ? 1.0f / options_.backward_passes_per_step
                               : 1.0f;
  // Submit every gradient, then wait: the engine fuses them.
  std::vector<std::pair<Slot*, std::shared_ptr<Completion>>> inflight;
  for (auto& [name, slot] : slots_) {
    if (slot.out == nullptr) continue;
    Request r;
    r.name = "grad." + name;
    r.count = static_cast<int64_t>(slot.sum.size());
    r.average = true;
    r.prescale = pass_scale;
    void* data = slot.sum.data();
    if (options_.compression == Compression::kFP16) {
      slot.wire.resize(slot.sum.size());
      for (size_t i = 0; i < slot.sum.size(); ++i) {
        slot.wire[i] = FloatToHalf(slot.sum[i]);
      }
      r.dtype = DataType::kFloat16;
      data = slot.wire.data();
    }
    inflight.push_back({&slot, engine_->Enqueue(r, data)});
  }
  Status status;
  for (auto& [slot, done] : inflight) {
    status.Update(done->Wait());
    if (!status.ok()) continue;
    for (size_t i = 0; i < slot->sum.size(); ++i) {
      slot->out[i] = options_.compression == Compression::kFP16
                         ? HalfToFloat(slot->wire[i])
                         : slot->sum[i];
    }
  }
  for (auto& [name, slot] : slots_) {
    slot.sum.clear();
    slot.out = nullptr;
  }
  if (!status.ok()) return status;
  return true;
}

}  // namespace hvd::runtime
