#include "runtime/transport/nccl/gpu_usage.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <memory>

#include "common/logging.h"

namespace hvd::runtime {
namespace {

// The few NVML entry points used, declared from NVML's documented C ABI
// (the toolkit here ships no nvml.h): a handle is an opaque pointer, 0 is
// NVML_SUCCESS, and the two structs below are nvmlUtilization_t and
// nvmlMemory_t.
struct NvmlUtilization {
  unsigned int gpu;     // % of the last sample period a kernel ran
  unsigned int memory;  // % of it memory was read or written
};
struct NvmlMemory {
  unsigned long long total, free, used;
};
using NvmlDevice = void*;

class Nvml {
 public:
  // The process's one NVML, opened on first use; null when the driver's
  // library is absent or does not initialise (no GPU, no driver).
  static Nvml* Get() {
    static Nvml* nvml = [] {
      auto n = std::make_unique<Nvml>();
      return n->Open() ? n.release() : nullptr;
    }();
    return nvml;
  }

  NvmlDevice ByBusId(const char* bus_id) const {
    NvmlDevice d = nullptr;
    return by_bus_id_(bus_id, &d) == 0 ? d : nullptr;
  }
  bool Utilization(NvmlDevice d, NvmlUtilization* u) const {
    return utilization_(d, u) == 0;
  }
  bool Memory(NvmlDevice d, NvmlMemory* m) const { return memory_(d, m) == 0; }

 private:
  bool Open() {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return false;
    auto init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
    by_bus_id_ = reinterpret_cast<int (*)(const char*, NvmlDevice*)>(
        dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    utilization_ = reinterpret_cast<int (*)(NvmlDevice, NvmlUtilization*)>(
        dlsym(lib, "nvmlDeviceGetUtilizationRates"));
    memory_ = reinterpret_cast<int (*)(NvmlDevice, NvmlMemory*)>(
        dlsym(lib, "nvmlDeviceGetMemoryInfo"));
    if (init == nullptr || by_bus_id_ == nullptr || utilization_ == nullptr ||
        memory_ == nullptr || init() != 0) {
      dlclose(lib);
      return false;
    }
    // Stays open for the process: reports are made until it exits.
    return true;
  }

  int (*by_bus_id_)(const char*, NvmlDevice*) = nullptr;
  int (*utilization_)(NvmlDevice, NvmlUtilization*) = nullptr;
  int (*memory_)(NvmlDevice, NvmlMemory*) = nullptr;
};

}  // namespace

Metrics::GpuReader MakeGpuReader(int device) {
  // NVML numbers GPUs its own way (CUDA_VISIBLE_DEVICES does not apply);
  // the PCI bus id names the same device to both.
  NvmlDevice handle = nullptr;
  char bus_id[32] = {};
  Nvml* nvml = Nvml::Get();
  if (nvml != nullptr &&
      cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device) == cudaSuccess) {
    handle = nvml->ByBusId(bus_id);
  }
  if (handle == nullptr) {
    HVD_LOG(Info) << "metrics: NVML is not available for GPU " << device
                  << ", so GPU utilisation is not reported (memory is)";
  }
  return [nvml, handle, device]() -> std::optional<Metrics::GpuUsage> {
    Metrics::GpuUsage u;
    u.device = device;
    if (handle != nullptr) {
      NvmlMemory m;
      NvmlUtilization util;
      if (!nvml->Memory(handle, &m)) return std::nullopt;
      u.memory_used_bytes = static_cast<double>(m.used);
      u.memory_total_bytes = static_cast<double>(m.total);
      if (nvml->Utilization(handle, &util)) u.utilization = util.gpu / 100.0;
      return u;
    }
    // The CUDA runtime reads the current device of the calling thread (the
    // metrics publisher's), so set it first.
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaSetDevice(device) != cudaSuccess ||
        cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      return std::nullopt;
    }
    u.memory_used_bytes = static_cast<double>(total_bytes - free_bytes);
    u.memory_total_bytes = static_cast<double>(total_bytes);
    return u;
  };
}

}  // namespace hvd::runtime
