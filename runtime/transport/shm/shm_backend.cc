#include "runtime/transport/shm/shm_backend.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "common/logging.h"
#include "common/random.h"
#include "runtime/transport/shm/shm_backend_impl.h"
#include "runtime/transport/shm/shm_heap.h"

namespace hvd::runtime {

int ReadPeer(pid_t pid, uint64_t remote, void* local, size_t bytes) {
  uint8_t* to = static_cast<uint8_t*>(local);
  while (bytes > 0) {
    iovec l{to, bytes};
    iovec r{reinterpret_cast<void*>(remote), bytes};
    ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    to += n;
    remote += static_cast<uint64_t>(n);
    bytes -= static_cast<size_t>(n);
  }
  return 0;
}

Status ShmBackend::ProbeSingleCopy() {
  if (o_.size == 1) return Status::Ok();
  // Under Yama's ptrace_scope=1 a process may read only its descendants
  // unless it names its readers; the peers are siblings (as OpenMPI's
  // shared-memory transport does, any process of this user may).
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  ShmRankState& self = seg_->state(o_.rank);
  StatusOr<void*> probe_block = ShmHeap::Process().Allocate(1);
  std::optional<ShmBlock> mine;
  if (probe_block.ok()) mine = ShmHeap::Process().Find(*probe_block, 1);
  PublishBlock(0, mine);
  // Each rank's word: a pattern and its rank, so a read of the wrong
  // memory shows.
  auto word = [](int rank) {
    return 0x6876640000000000ull + static_cast<uint64_t>(rank);
  };
  probe_ = word(o_.rank);
  self.buffer[0].store(reinterpret_cast<uintptr_t>(&probe_),
                       std::memory_order_release);
  HVD_RETURN_IF_ERROR(seg_->Barrier("single-copy probe"));
  std::string why, why_blocks = mine ? "" : "no block of its own";
  // The peers' processes stay the same for the backend's life.
  peer_pid_.resize(o_.size);
  peer_buffer_.resize(o_.size);
  for (int q = 0; q < o_.size; ++q) peer_pid_[q] = seg_->state(q).pid.load();
  for (int q = 0; q < o_.size && why.empty(); ++q) {
    if (q == o_.rank) continue;
    uint64_t got = 0;
    const int err = ReadPeer(
        peer_pid_[q], seg_->state(q).buffer[0].load(std::memory_order_acquire),
        &got, sizeof(got));
    if (err != 0) {
      why = "process_vm_readv of local rank " + std::to_string(q) +
            " failed: " + std::strerror(err);
    } else if (got != word(q)) {
      why = "local rank " + std::to_string(q) + "'s memory read wrong";
    }
  }
  for (int q = 0; q < o_.size && why_blocks.empty(); ++q) {
    if (q == o_.rank) continue;
    std::optional<ShmBlock> theirs = PeerBlock(0, q);
    Status s = theirs ? peer_blocks_.Probe(peer_pid_[q], *theirs)
                      : Status::Unavailable("shared memory", "no block");
    if (!s.ok()) {
      why_blocks = "taking local rank " + std::to_string(q) +
                   "'s descriptor failed: " + s.message();
    }
  }
  // Bit 1: this rank reads every peer; bit 2: it maps every peer's blocks.
  self.can_read.store(
      1u | (why.empty() ? 2u : 0u) | (why_blocks.empty() ? 4u : 0u),
      std::memory_order_release);
  HVD_RETURN_IF_ERROR(seg_->Barrier("single-copy probe"));
  if (probe_block.ok()) (void)ShmHeap::Process().Free(*probe_block);
  self.block_id[0].store(0, std::memory_order_relaxed);
  bool all = true, all_blocks = true;
  for (int q = 0; q < o_.size; ++q) {
    const uint32_t can =
        seg_->state(q).can_read.load(std::memory_order_acquire);
    all &= (can & 2u) != 0;
    all_blocks &= (can & 4u) != 0;
  }
  blocks_ = all_blocks;
  if (!why_blocks.empty()) {
    HVD_LOG(Warning) << "shared memory: buffers from alloc_shared are "
                        "copied like any other ("
                     << why_blocks << ")";
  }
  if (o_.single_copy_bytes == 0) all = false;
  if (!why.empty() && o_.single_copy_bytes != 0) {
    HVD_LOG(Warning) << "shared memory: single-copy allreduce is off (" << why
                     << "; containers may forbid cross-memory attach): "
                        "the two-copy path is used";
  }
  direct_ = all;
  if (all && o_.rank == 0) {
    HVD_LOG(Debug) << "shared memory: single-copy allreduce from "
                   << o_.single_copy_bytes << " bytes"
                   << (o_.single_copy_limit
                           ? " up to " + std::to_string(o_.single_copy_limit)
                           : std::string());
  }
  return Status::Ok();
}

Status ShmBackend::Allgatherv(const void* in, void* out,
                              const std::vector<size_t>& bytes) {
  if (bytes.size() != static_cast<size_t>(o_.size)) {
    return Status::InvalidArgument("allgatherv", "needs one size per rank");
  }
  return Run("allgatherv", [&]() -> Status {
    size_t most = *std::max_element(bytes.begin(), bytes.end());
    std::vector<size_t> at(o_.size, 0);
    for (int q = 1; q < o_.size; ++q) at[q] = at[q - 1] + bytes[q - 1];
    const uint8_t* mine = static_cast<const uint8_t*>(in);
    uint8_t* dst = static_cast<uint8_t*>(out);
    // This rank's bytes already where they go: only the others' move.
    const bool in_place = mine == dst + at[o_.rank];
    for (size_t off = 0; off < most || (most == 0 && off == 0);
         off += o_.slot_bytes) {
      if (most == 0) break;
      const int set = NextSet();
      if (off < bytes[o_.rank]) {
        CopyBytes(In(set, o_.rank), mine + off,
                  std::min(o_.slot_bytes, bytes[o_.rank] - off));
      }
      HVD_RETURN_IF_ERROR(seg_->Barrier("allgatherv"));
      for (int q = 0; q < o_.size; ++q) {
        if (q == o_.rank && in_place) continue;
        if (off < bytes[q]) {
          CopyBytes(dst + at[q] + off, In(set, q),
                    std::min(o_.slot_bytes, bytes[q] - off));
        }
      }
    }
    return Status::Ok();
  });
}

Status ShmBackend::Broadcast(void* data, size_t bytes, int root) {
  if (root < 0 || root >= o_.size) {
    return Status::InvalidArgument("broadcast root",
                                   std::to_string(root) + " is not a rank");
  }
  if (bytes == 0 || o_.size == 1) return Status::Ok();
  return Run("broadcast", [&]() -> Status {
    uint8_t* p = static_cast<uint8_t*>(data);
    for (size_t off = 0; off < bytes; off += o_.slot_bytes) {
      const size_t c = std::min(o_.slot_bytes, bytes - off);
      const int set = NextSet();
      if (o_.rank == root) CopyBytes(In(set, root), p + off, c);
      HVD_RETURN_IF_ERROR(seg_->Barrier("broadcast"));
      if (o_.rank != root) CopyBytes(p + off, In(set, root), c);
    }
    return Status::Ok();
  });
}

Status ShmBackend::Alltoallv(const void* in,
                             const std::vector<size_t>& send_bytes, void* out,
                             const std::vector<size_t>& recv_bytes) {
  const size_t n = static_cast<size_t>(o_.size);
  if (send_bytes.size() != n || recv_bytes.size() != n) {
    return Status::InvalidArgument("alltoallv", "needs one size per rank");
  }
  return Run("alltoallv", [&]() -> Status {
    // Each slot is cut in one piece per destination; rounds go on while
    // any rank still has data for anyone (the "more" flags every rank
    // reads after the barrier).
    const size_t piece = o_.slot_bytes / n / kShmAlign * kShmAlign;
    std::vector<size_t> sent_at(n, 0), recv_at(n, 0);
    for (size_t q = 1; q < n; ++q) {
      sent_at[q] = sent_at[q - 1] + send_bytes[q - 1];
      recv_at[q] = recv_at[q - 1] + recv_bytes[q - 1];
    }
    const uint8_t* src = static_cast<const uint8_t*>(in);
    uint8_t* dst = static_cast<uint8_t*>(out);
    for (size_t off = 0;; off += piece) {
      const int set = NextSet();
      bool more = false;
      for (size_t d = 0; d < n; ++d) {
        if (off < send_bytes[d]) {
          CopyBytes(In(set, o_.rank) + d * piece, src + sent_at[d] + off,
                    std::min(piece, send_bytes[d] - off));
        }
        more |= off + piece < send_bytes[d];
      }
      seg_->state(o_.rank).more[set].store(more, std::memory_order_relaxed);
      HVD_RETURN_IF_ERROR(seg_->Barrier("alltoallv"));
      bool anyone = false;
      for (size_t q = 0; q < n; ++q) {
        if (off < recv_bytes[q]) {
          CopyBytes(dst + recv_at[q] + off, In(set, q) + o_.rank * piece,
                    std::min(piece, recv_bytes[q] - off));
        }
        anyone |= seg_->state(q).more[set].load(std::memory_order_relaxed) != 0;
      }
      if (!anyone) break;
    }
    return Status::Ok();
  });
}

Status ShmBackend::Reducescatter(const void* in, void* out,
                                 const std::vector<size_t>& counts,
                                 DataType type, ReduceOp op) {
  if (counts.size() != static_cast<size_t>(o_.size)) {
    return Status::InvalidArgument("reducescatter", "needs one count per rank");
  }
  size_t total = 0, offset = 0;
  for (int r = 0; r < o_.size; ++r) {
    if (r < o_.rank) offset += counts[r];
    total += counts[r];
  }
  const size_t esize = DataTypeSize(type);
  if (o_.size == 1) {
    if (total) CopyBytes(out, in, total * esize);
    return Status::Ok();
  }
  if (total == 0) return Status::Ok();
  // A true reduce-scatter: per chunk, every rank copies in the parts of
  // its input the others reduce (its own block stays where it is), then
  // reduces the part of its own block that falls in the chunk, its own
  // input first, straight into `out` (one barrier per chunk; the
  // alternating sets keep the next chunk from overwriting what a slow
  // rank still reads). `out` may be `in`'s own block: nobody else reads
  // it, and each element of it is read before it is written.
  return Run("reducescatter", [&]() -> Status {
    const size_t per_chunk = o_.slot_bytes / esize;
    const uint8_t* src = static_cast<const uint8_t*>(in);
    uint8_t* dst = static_cast<uint8_t*>(out);
    const size_t lo_mine = offset, hi_mine = offset + counts[o_.rank];
    for (size_t off = 0; off < total; off += per_chunk) {
      const size_t c = std::min(per_chunk, total - off);
      const int set = NextSet();
      const size_t lo = std::max(lo_mine, off), hi = std::min(hi_mine, off + c);
      uint8_t* slot = In(set, o_.rank);
      if (hi > lo) {
        CopyBytes(slot, src + off * esize, (lo - off) * esize);
        CopyBytes(slot + (hi - off) * esize, src + hi * esize,
                  (off + c - hi) * esize);
      } else {
        CopyBytes(slot, src + off * esize, c * esize);
      }
      HVD_RETURN_IF_ERROR(seg_->Barrier("reducescatter"));
      if (hi > lo) {
        uint8_t* acc = dst + (lo - lo_mine) * esize;
        const size_t at = (lo - off) * esize;
        const uint8_t* own = src + lo * esize;
        for (int q = 0, first = 1; q < o_.size; ++q) {
          if (q == o_.rank) continue;
          ReduceBuffers(type, op, acc, first ? own : acc, In(set, q) + at,
                        hi - lo);
          first = 0;
        }
      }
    }
    return Status::Ok();
  });
}

Status ShmBackend::Barrier() {
  if (o_.size == 1) return Status::Ok();
  return Run("barrier", [&] { return seg_->Barrier("barrier"); });
}

bool ShmBackend::PublishBlock(int set, const std::optional<ShmBlock>& b) {
  if (!blocks_ && !b) return false;  // never published: nothing to clear
  ShmRankState& self = seg_->state(o_.rank);
  // The barrier that follows publishes these.
  self.block_id[set].store(b ? b->id : 0, std::memory_order_relaxed);
  if (!b) return false;
  self.block_fd[set].store(b->fd, std::memory_order_relaxed);
  self.block_bytes[set].store(b->bytes, std::memory_order_relaxed);
  self.block_offset[set].store(b->offset, std::memory_order_relaxed);
  return true;
}

std::optional<ShmBlock> ShmBackend::PeerBlock(int set, int q) {
  const ShmRankState& s = seg_->state(q);
  const uint64_t id = s.block_id[set].load(std::memory_order_relaxed);
  if (id == 0) return std::nullopt;
  return ShmBlock{id, s.block_fd[set].load(std::memory_order_relaxed),
                  s.block_bytes[set].load(std::memory_order_relaxed),
                  s.block_offset[set].load(std::memory_order_relaxed)};
}

int ShmBackend::BuffersInBlocks(int set) {
  if (!blocks_) return 0;
  int n = 0;
  for (int q = 0; q < o_.size; ++q) {
    n += seg_->state(q).block_id[set].load(std::memory_order_relaxed) != 0;
  }
  return n;
}

StatusOr<std::unique_ptr<Backend>> CreateShmBackend(const ShmOptions& o,
                                                    Store& store) {
  if (o.size < 1 || o.size > kShmMaxRanks) {
    return Status::InvalidArgument(
        "local rank " + std::to_string(o.rank) + ": shared memory",
        "supports 1 to " + std::to_string(kShmMaxRanks) + " ranks per host");
  }
  ShmOptions fixed = o;
  fixed.slot_bytes =
      ShmRoundUp(std::max<size_t>(o.slot_bytes, kShmAlign * o.size));
  HVD_ASSIGN_OR_RETURN(
      std::unique_ptr<ShmSegment> seg,
      ShmSegment::Map(fixed, store, "shm",
                      2 * static_cast<size_t>(o.size + 1) * fixed.slot_bytes));
  auto backend = std::make_unique<ShmBackend>(fixed, std::move(seg));
  HVD_RETURN_IF_ERROR(backend->ProbeSingleCopy());
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace hvd::runtime
