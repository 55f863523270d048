// Memory the ranks of one host reach directly, for tensors that they then
// reduce without any copy through the segment or the kernel (in the manner
// of MPI_Alloc_mem): hvd::alloc_shared hands it out, the executor's fusion
// buffer lives in it, and the shared-memory backend reduces straight
// between such buffers when every rank's lies in one.
//
// Each allocation is a memfd of its own: no name in /dev/shm, so nothing is
// left behind whatever happens to the process. A peer maps it after taking
// a copy of the descriptor with pidfd_getfd (the same permission as
// process_vm_readv, which the backend probes).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "common/status.h"

namespace hvd::runtime {

// Where a buffer lies: its block (id unique in the process, never reused),
// the owner's descriptor of it, its size, and the buffer's offset in it.
struct ShmBlock {
  uint64_t id = 0;
  int fd = -1;
  uint64_t bytes = 0;
  uint64_t offset = 0;
};

class ShmHeap {
 public:
  // The process's heap (a worker's ranks of a test share it).
  static ShmHeap& Process();

  // `bytes` of zeroed memory, page-aligned.
  StatusOr<void*> Allocate(size_t bytes);
  // Frees what Allocate returned; an error for any other pointer.
  Status Free(void* p);
  // The block [p, p + bytes) lies wholly in, if any.
  std::optional<ShmBlock> Find(const void* p, size_t bytes) const;

 private:
  struct Entry {
    size_t bytes;
    int fd;
    uint64_t id;
  };
  mutable std::mutex mu_;
  std::map<uintptr_t, Entry> blocks_;  // by address
  uint64_t next_id_ = 1;
  // Lets Find answer without the lock in a process that never allocated.
  std::atomic<size_t> count_{0};
};

// The peers' blocks mapped into this process, fetched once each and kept:
// at most kShmPeerBlocksKept, the least recently used unmapped first (a
// block its owner freed stays until then).
inline constexpr size_t kShmPeerBlocksKept = 32;

class ShmPeerBlocks {
 public:
  ShmPeerBlocks() = default;
  ShmPeerBlocks(const ShmPeerBlocks&) = delete;
  ShmPeerBlocks& operator=(const ShmPeerBlocks&) = delete;
  ~ShmPeerBlocks();

  // Whether this process may take block `b`'s descriptor from `pid`
  // (nothing is mapped).
  Status Probe(pid_t pid, const ShmBlock& b);
  // The start of block `b` of process `pid`, mapped here.
  StatusOr<uint8_t*> Map(pid_t pid, const ShmBlock& b);

 private:
  StatusOr<int> PidFd(pid_t pid);
  // A descriptor of block `b` of `pid`, of the size published.
  StatusOr<int> TakeFd(pid_t pid, const ShmBlock& b);
  struct Mapped {
    uint8_t* base;
    size_t bytes;
    uint64_t used;
  };
  std::map<pid_t, int> pidfds_;
  std::map<std::pair<pid_t, uint64_t>, Mapped> mapped_;
  uint64_t uses_ = 0;
};

}  // namespace hvd::runtime
