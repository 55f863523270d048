// Collectives over NCCL, for buffers in GPU memory. nccl_backend.cc is
// built when CUDA and NCCL are found at configure time, no_nccl.cc
// otherwise; nothing outside this folder depends on which.
#pragma once

#include <functional>
#include <memory>

#include "common/status.h"
#include "runtime/backend.h"
#include "runtime/backend_set.h"
#include "runtime/store.h"

namespace hvd::runtime {

// CUDA devices visible to this process; 0 without a driver or device.
int CudaDeviceCount();
// NCCL_VERSION_CODE of the NCCL built in; 0 without one.
int NcclVersionCode();

struct NcclOptions {
  int rank = 0;
  int size = 1;
  int device = 0;  // the rank's GPU (its assignment's gpu)
  // Hierarchical allreduce (several hosts of local_size ranks each, hosts
  // holding consecutive ranks): reduce-scatter among the host's GPUs, an
  // allreduce of each share among the GPUs of the same local rank, and an
  // allgather on the host; the two communicators are split from the job's.
  bool hierarchical_allreduce = false;
  int local_rank = 0, local_size = 1, cross_rank = 0;
  // HOROVOD_NUM_NCCL_STREAMS: streams, each with communicators of its own;
  // above one the backend defers (Backend::Defers) and the calls of a
  // cycle overlap.
  int streams = 1;
};

// Rank 0 makes the ncclUniqueId and publishes it in `store`; the others
// wait for it. Every buffer given to the backend must be device memory of
// `device`; with one stream calls block until the GPU has finished, with
// more they return once queued and Flush waits.
StatusOr<std::unique_ptr<Backend>> CreateNcclBackend(const NcclOptions& options,
                                                     Store& store);

// What the engine calls, on first use, to get the backend for CUDA
// tensors on `device`: CreateNcclBackend on `store` (options.device is
// replaced); null where libhvd was built
// without NCCL (no_nccl.cc), so callers need no #if.
DeviceBackendFactory MakeDeviceBackendFactory(const NcclOptions& options,
                                              std::shared_ptr<Store> store);

}  // namespace hvd::runtime
