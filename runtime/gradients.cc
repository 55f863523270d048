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
  if (slot.done) {
    return Status::InvalidArgument("gradient '" + name + "'",
                                   "was added twice in one pass");
  }
  const bool last_pass = passes_ + 1 == options_.backward_passes_per_step;
  if (last_pass && slot.sum.empty() &&
      options_.compression == Compression::kNone) {
    // One pass per step: nothing to accumulate, reduce the caller's buffer.
    slot.out = grad;
    slot.count = count;
    slot.in_place = true;
    Submit(name, slot);
    return Status::Ok();
  }
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
  slot.count = count;
  if (last_pass) Submit(name, slot);
  return Status::Ok();
}

void GradientReducer::Submit(const std::string& name, Slot& slot) {
  Request r;
  r.name = "grad." + name;
  r.average = true;
  r.prescale = options_.average_aggregated
                   ? 1.0 / options_.backward_passes_per_step
                   : 1.0;
  r.count = static_cast<int64_t>(slot.count);
  void* data = slot.in_place ? static_cast<void*>(slot.out) : slot.sum.data();
  if (options_.compression == Compression::kFP16) {
    slot.wire.resize(slot.sum.size());
    for (size_t i = 0; i < slot.sum.size(); ++i) {
      slot.wire[i] = FloatToHalf(slot.sum[i]);
    }
    r.dtype = DataType::kFloat16;
    data = slot.wire.data();
  }
  slot.done = engine_->Enqueue(r, data);
}

StatusOr<bool> GradientReducer::EndPass() {
  if (++passes_ < options_.backward_passes_per_step) return false;
  passes_ = 0;
  // Gradients not given in this last pass (only in earlier ones) start
  // now; then wait for all of them.
  for (auto& [name, slot] : slots_) {
    if (slot.out != nullptr && !slot.done) Submit(name, slot);
  }
  Status status;
  for (auto& [name, slot] : slots_) {
    if (!slot.done) continue;
    status.Update(slot.done->Wait());
    if (!status.ok() || slot.in_place) continue;
    for (size_t i = 0; i < slot.sum.size(); ++i) {
      slot.out[i] = options_.compression == Compression::kFP16
                        ? HalfToFloat(slot.wire[i])
                        : slot.sum[i];
    }
  }
  for (auto& [name, slot] : slots_) {
    slot.sum.clear();
    slot.out = nullptr;
    slot.done.reset();
    slot.in_place = false;
  }
  if (!status.ok()) return status;
  return true;
}

}  // namespace hvd::runtime
