// CPU binding of a worker, as mpirun binds its ranks by default: the CPUs
// this process may use are split into equal contiguous blocks, one per
// local rank, and each rank keeps to its block. On a host with as many
// ranks as cores, a rank's engine and compute threads then share one
// core's caches, wake each other without an inter-processor interrupt,
// and never displace the other rank (measured on two cores: a 4-byte
// allreduce in 12 us instead of 12-50 us). That is the default where the
// data goes through shared memory; where it goes through Gloo over TCP,
// binding made transfers wait for scheduler ticks (a 256 KiB allreduce in
// 4 ms instead of 0.6), so there it is off unless HVD_BIND_TO=core.
// HOROVOD_THREAD_AFFINITY pins the engine thread itself, as in Horovod.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace hvd::runtime {

// The CPUs this process may run on (sched_getaffinity), ascending.
StatusOr<std::vector<int>> AllowedCpus();

// Local rank `local_rank`'s block of `allowed` among `local_size` ranks;
// empty when there are fewer CPUs than ranks (nothing to bind to). Pure.
std::vector<int> CpuBlock(const std::vector<int>& allowed, int local_rank,
                          int local_size);

// Binds every thread of this process (those to come inherit it) to `cpus`.
Status BindProcess(const std::vector<int>& cpus);

// Binds the calling thread to `cpu`.
Status BindThread(int cpu);

// "0-3,8" style, for logs.
std::string CpuList(const std::vector<int>& cpus);

}  // namespace hvd::runtime
