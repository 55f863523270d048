// libhvd without NCCL: no CUDA devices, and no backend for CUDA tensors
// (the engine refuses them at enqueue with a message saying so).
#include "runtime/transport/nccl/nccl_backend.h"

namespace hvd::runtime {

int CudaDeviceCount() { return 0; }

int NcclVersionCode() { return 0; }

StatusOr<std::unique_ptr<Backend>> CreateNcclBackend(const NcclOptions& options,
                                                     Store&) {
  return Status::FailedPrecondition(
      "rank " + std::to_string(options.rank) + ": nccl",
      "this libhvd was built without CUDA and NCCL");
}

DeviceBackendFactory MakeDeviceBackendFactory(const NcclOptions&,
                                              std::shared_ptr<Store>) {
  return nullptr;
}

}  // namespace hvd::runtime
