// The data backends of one context, by device: host tensors go to the
// host backend (shared memory, Gloo over TCP, or the hierarchical pair, as
// the topology decision picked: runtime/transport/topology.h), CUDA
// tensors to the device backend (NCCL), made on first use. Autotune may
// switch the host data to an alternative path and back. The engine asks
// this set for a backend by device and knows nothing of transports.
//
// Thread-safety: the engine thread alone, once the engine runs.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "runtime/backend.h"

namespace hvd::runtime {

using BackendFactory = std::function<StatusOr<std::unique_ptr<Backend>>()>;
using DeviceBackendFactory =
    std::function<StatusOr<std::unique_ptr<Backend>>(int device)>;

class BackendSet {
 public:
  // `host` and its name ("shared memory"); `alternative` makes the other
  // host path autotune may try (collective: every rank calls it in the same
  // cycle), null where there is none; `device` makes the backend for CUDA
  // tensors (collective, on the first CUDA tensor), null without one.
  BackendSet(std::unique_ptr<Backend> host, std::string host_name,
             BackendFactory alternative = nullptr,
             std::string alternative_name = "",
             DeviceBackendFactory device = nullptr, int cuda_devices = 0);

  // The host data path in use.
  Backend& host() { return *current_; }

  // The name of the host data path in use ("shared memory", "TCP", ...).
  const std::string& host_name() const {
    return current_ == primary_.get() ? primary_name_ : alternative_name_;
  }
  // Whether CUDA tensors have a backend, and how many devices it may use.
  bool has_device() const { return static_cast<bool>(make_device_); }
  int cuda_devices() const { return cuda_devices_; }
  // The backend of CUDA device `device`, made on first use; a rank's CUDA
  // tensors must all be on one device.
  StatusOr<Backend*> Device(int device, int rank);

  // Autotune's choice, at the same cycle on every rank: the first host
  // path, or the alternative (made on first use). No-op without one.
  bool can_switch_host() const { return static_cast<bool>(make_alternative_); }
  Status UsePrimaryHost(bool primary);

  // Autotune's on/off choices for the host backend in use, where it has
  // the knob (backend.h); no-ops where it has not.
  void SetHierarchical(bool allreduce, bool allgather);
  void SetSingleCopy(bool on);
  void SetSeveralStreams(bool on);
  void SetWideCrossovers(bool on);

  // How the timeline names an operation on each ("GLOO_ALLREDUCE", as
  // Horovod's do): the prefix of the host and of the device backends.
  void SetActivityPrefixes(std::string host, std::string device) {
    host_activity_ = std::move(host);
    device_activity_ = std::move(device);
  }
  const std::string& activity_prefix(bool device) const {
    return device ? device_activity_ : host_activity_;
  }

 private:
  std::unique_ptr<Backend> primary_;
  std::string primary_name_;
  BackendFactory make_alternative_;
  std::string alternative_name_;
  std::unique_ptr<Backend> alternative_;  // made when autotune tries it
  Backend* current_;
  DeviceBackendFactory make_device_;
  int cuda_devices_;
  std::unique_ptr<Backend> device_;  // made on first use
  int device_index_ = -1;
  std::string host_activity_, device_activity_;
};

}  // namespace hvd::runtime
