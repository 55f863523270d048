#include "runtime/transport/shm/shm_heap.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace hvd::runtime {
namespace {

std::string Errno(const char* call) {
  return std::string(call) + ": " + std::strerror(errno);
}

// Through syscall(): glibc 2.36's <sys/pidfd.h> lacks C linkage for C++.
int PidfdOpen(pid_t pid) {
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}
int PidfdGetfd(int pidfd, int fd) {
  return static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
}

// Whole pages, so that a block is mapped the same way on every side.
size_t PageRound(size_t bytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (std::max<size_t>(bytes, 1) + page - 1) / page * page;
}

}  // namespace

ShmHeap& ShmHeap::Process() {
  static ShmHeap* heap = new ShmHeap;  // outlives every backend
  return *heap;
}

StatusOr<void*> ShmHeap::Allocate(size_t bytes) {
  const size_t rounded = PageRound(bytes);
  const int fd = memfd_create("hvd-shared", MFD_CLOEXEC);
  if (fd < 0)
    return Status::ResourceExhausted("alloc_shared", Errno("memfd_create"));
  if (ftruncate(fd, static_cast<off_t>(rounded)) != 0) {
    Status s = Status::ResourceExhausted(
        "alloc_shared", "ftruncate to " + std::to_string(rounded) +
                            " bytes: " + std::strerror(errno));
    close(fd);
    return s;
  }
  void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    Status s = Status::ResourceExhausted("alloc_shared", Errno("mmap"));
    close(fd);
    return s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  blocks_[reinterpret_cast<uintptr_t>(p)] = Entry{rounded, fd, next_id_++};
  count_.fetch_add(1, std::memory_order_release);
  return p;
}

Status ShmHeap::Free(void* p) {
  Entry e;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(reinterpret_cast<uintptr_t>(p));
    if (it == blocks_.end()) {
      return Status::InvalidArgument(
          "free_shared", "the pointer is not one alloc_shared returned");
    }
    e = it->second;
    blocks_.erase(it);
    count_.fetch_sub(1, std::memory_order_release);
  }
  munmap(p, e.bytes);
  close(e.fd);
  return Status::Ok();
}

std::optional<ShmBlock> ShmHeap::Find(const void* p, size_t bytes) const {
  if (count_.load(std::memory_order_acquire) == 0) return std::nullopt;
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = blocks_.upper_bound(at);
  if (it == blocks_.begin()) return std::nullopt;
  --it;
  const uintptr_t base = it->first;
  if (at - base >= it->second.bytes || bytes > it->second.bytes - (at - base)) {
    return std::nullopt;
  }
  return ShmBlock{it->second.id, it->second.fd, it->second.bytes, at - base};
}

ShmPeerBlocks::~ShmPeerBlocks() {
  for (auto& [key, m] : mapped_) munmap(m.base, m.bytes);
  for (auto& [pid, fd] : pidfds_) close(fd);
}

StatusOr<int> ShmPeerBlocks::PidFd(pid_t pid) {
  auto it = pidfds_.find(pid);
  if (it != pidfds_.end()) return it->second;
  const int fd = PidfdOpen(pid);
  if (fd < 0) return Status::Unavailable("pidfd_open", std::strerror(errno));
  pidfds_[pid] = fd;
  return fd;
}

StatusOr<int> ShmPeerBlocks::TakeFd(pid_t pid, const ShmBlock& b) {
  HVD_ASSIGN_OR_RETURN(int pidfd, PidFd(pid));
  const int fd = PidfdGetfd(pidfd, b.fd);
  if (fd < 0) return Status::Unavailable("pidfd_getfd", std::strerror(errno));
  // Another size: not the block published (it was freed while in use).
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != b.bytes) {
    close(fd);
    return Status::Unavailable("shared memory",
                               "a peer's block came back with another size");
  }
  return fd;
}

Status ShmPeerBlocks::Probe(pid_t pid, const ShmBlock& b) {
  HVD_ASSIGN_OR_RETURN(int fd, TakeFd(pid, b));
  close(fd);
  return Status::Ok();
}

StatusOr<uint8_t*> ShmPeerBlocks::Map(pid_t pid, const ShmBlock& b) {
  auto key = std::make_pair(pid, b.id);
  auto it = mapped_.find(key);
  if (it != mapped_.end()) {
    it->second.used = ++uses_;
    return it->second.base;
  }
  HVD_ASSIGN_OR_RETURN(int fd, TakeFd(pid, b));
  void* p = mmap(nullptr, b.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);  // the mapping keeps the memory
  if (p == MAP_FAILED)
    return Status::ResourceExhausted("shared memory", Errno("mmap"));
  if (mapped_.size() >= kShmPeerBlocksKept) {
    auto oldest = mapped_.begin();
    for (auto m = mapped_.begin(); m != mapped_.end(); ++m) {
      if (m->second.used < oldest->second.used) oldest = m;
    }
    munmap(oldest->second.base, oldest->second.bytes);
    mapped_.erase(oldest);
  }
  mapped_[key] = Mapped{static_cast<uint8_t*>(p), b.bytes, ++uses_};
  return static_cast<uint8_t*>(p);
}

}  // namespace hvd::runtime
