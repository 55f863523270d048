#include "runtime/backend_set.h"

#include "common/logging.h"

namespace hvd::runtime {

BackendSet::BackendSet(std::unique_ptr<Backend> host, std::string host_name,
                       BackendFactory alternative, std::string alternative_name,
                       DeviceBackendFactory device, int cuda_devices)
    : primary_(std::move(host)),
      primary_name_(std::move(host_name)),
      make_alternative_(std::move(alternative)),
      alternative_name_(std::move(alternative_name)),
      current_(primary_.get()),
      make_device_(std::move(device)),
      cuda_devices_(make_device_ ? cuda_devices : 0) {}

StatusOr<Backend*> BackendSet::Device(int device, int rank) {
  if (!device_) {
    if (!make_device_) {
      return Status::Internal("engine", "no backend for CUDA tensors");
    }
    HVD_ASSIGN_OR_RETURN(device_, make_device_(device));
    device_index_ = device;
  }
  if (device != device_index_) {
    return Status::InvalidArgument(
        "rank " + std::to_string(rank),
        "CUDA tensors on device " + std::to_string(device) + " and on device " +
            std::to_string(device_index_) +
            ": a rank's CUDA tensors must all be on one device");
  }
  return device_.get();
}

Status BackendSet::UsePrimaryHost(bool primary) {
  if (!make_alternative_) return Status::Ok();
  Backend* was = current_;
  if (primary) {
    current_ = primary_.get();
  } else {
    if (!alternative_) {
      auto made = make_alternative_();
      if (!made.ok()) {
        return made.status().WithContext("autotune: " + alternative_name_ +
                                         " to try");
      }
      alternative_ = std::move(*made);
    }
    current_ = alternative_.get();
  }
  if (was != current_) {
    HVD_LOG(Info) << "autotune: data through "
                  << (primary ? primary_name_ : alternative_name_);
  }
  return Status::Ok();
}

void BackendSet::SetHierarchical(bool allreduce, bool allgather) {
  if (auto* knob = dynamic_cast<HierarchicalKnob*>(current_)) {
    knob->SetHierarchical(allreduce, allgather);
  }
}

void BackendSet::SetSingleCopy(bool on) {
  if (auto* knob = dynamic_cast<SingleCopyKnob*>(current_)) {
    knob->SetSingleCopy(on);
  }
}

void BackendSet::SetSeveralStreams(bool on) {
  if (auto* knob = dynamic_cast<TcpKnob*>(current_)) {
    knob->SetSeveralStreams(on);
  }
}

void BackendSet::SetWideCrossovers(bool on) {
  if (auto* knob = dynamic_cast<TcpKnob*>(current_)) {
    knob->SetWideCrossovers(on);
  }
}

}  // namespace hvd::runtime
