// Collectives over NCCL, for buffers in GPU memory. Built only when CUDA
// and NCCL are found at configure time (HVD_WITH_NCCL); every #if on them
// lives in this folder.
#pragma once

#include <memory>

#include "common/status.h"
#include "runtime/backend.h"
#include "runtime/store.h"

namespace hvd::runtime {

// CUDA devices visible to this process; 0 without a driver or device.
int CudaDeviceCount();

struct NcclOptions {
  int rank = 0;
  int size = 1;
  int device = 0;  // the rank's GPU (its assignment's gpu)
};

// Rank 0 makes the ncclUniqueId and publishes it in `store`; the others
// wait for it. Every buffer given to the backend must be device memory of
// `device`; calls block until the GPU has finished.
StatusOr<std::unique_ptr<Backend>> CreateNcclBackend(const NcclOptions& options,
                                                     Store& store);

}  // namespace hvd::runtime
