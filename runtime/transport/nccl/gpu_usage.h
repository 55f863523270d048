// The rank's GPU as the metrics report it (runtime/metrics.h): memory in
// use and the share of time a kernel ran, read when a report is made.
// Built with the NCCL backend only; nothing else includes it.
#pragma once

#include "runtime/metrics.h"

namespace hvd::runtime {

// A reader for CUDA device `device` (as this process numbers it). NVML,
// opened at run time from the driver (libnvidia-ml.so.1, so that libhvd
// needs no NVML to link or load), gives memory and utilisation; without it
// the CUDA runtime gives memory alone. The reader returns nullopt when
// neither can tell.
Metrics::GpuReader MakeGpuReader(int device);

}  // namespace hvd::runtime
