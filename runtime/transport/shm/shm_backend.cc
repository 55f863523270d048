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
#include "runtime/transport/shm/shm_heap.h"

namespace hvd::runtime {
namespace {

// Single-copy reduction works on pieces this large, so that a peer's piece
// read into scratch is still in cache when it is reduced.
constexpr size_t kPieceBytes = 256 << 10;
// Reducing between shared blocks works on pieces small enough that the
// result is still in cache when it is copied to the peers' buffers.
constexpr size_t kBlockPieceBytes = 64 << 10;

// Reads `bytes` at `remote` in process `pid` into `local` (cross-memory
// attach: one copy, by the kernel). The errno when it fails.
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

// How often each path ran, for tests.
struct {
  std::atomic<uint64_t> shared_buffers{0}, single_copy{0};
} g_paths;

class ShmBackend final : public Backend {
 public:
  ShmBackend(const ShmOptions& o, std::unique_ptr<ShmSegment> seg)
      : o_(o), seg_(std::move(seg)), data_(seg_->data()) {}

  // Whether every rank of the host can read every other's memory: each
  // publishes a word and reads its peers'; single copy is used only when
  // all could (a rank alone must not take another path than its peers).
  // Every rank calls it once, in the same place, before any collective.
  //
  // The same for mapping the peers' shared blocks (pidfd_getfd, the same
  // permission): each rank publishes a block of its own, and the peers
  // take its descriptor.
  Status ProbeSingleCopy() {
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
      const int err =
          ReadPeer(peer_pid_[q],
                   seg_->state(q).buffer[0].load(std::memory_order_acquire),
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

  Status Allreduce(void* data, size_t count, DataType type,
                   ReduceOp op) override {
    return AllreduceScaled(data, count, type, op, 1.0);
  }

  Status AllreduceScaled(void* data, size_t count, DataType type, ReduceOp op,
                         double post) override {
    if (count == 0) return Status::Ok();
    if (o_.size == 1) {
      if (post != 1.0) ScaleBuffer(type, data, count, post);
      return Status::Ok();
    }
    // Where this op's first data set is published: whether this rank's
    // buffer lies in a shared block (the peers learn it at the first
    // barrier, and every rank then takes the same path).
    const size_t bytes = count * DataTypeSize(type);
    const bool in_block = PublishBlock(
        static_cast<int>(set_counter_ & 1),
        blocks_ ? ShmHeap::Process().Find(data, bytes) : std::nullopt);
    if (direct_ && single_copy_on_ && bytes >= o_.single_copy_bytes &&
        (o_.single_copy_limit == 0 || bytes <= o_.single_copy_limit)) {
      return Run("allreduce",
                 [&] { return AllreduceDirect(data, count, type, op, post); });
    }
    if (o_.size == 2) {
      return Run("allreduce", [&] {
        return AllreducePair(data, count, type, op, post, in_block);
      });
    }
    return Run("allreduce", [&]() -> Status {
      const size_t esize = DataTypeSize(type);
      const size_t per_chunk = o_.slot_bytes / esize;
      uint8_t* bytes = static_cast<uint8_t*>(data);
      for (size_t off = 0; off < count; off += per_chunk) {
        const size_t c = std::min(per_chunk, count - off);
        const int set = NextSet();
        if (off > 0 || !in_block) {
          std::memcpy(In(set, o_.rank), bytes + off * esize, c * esize);
        }
        HVD_RETURN_IF_ERROR(seg_->Barrier("allreduce"));
        if (off == 0) {
          HVD_ASSIGN_OR_RETURN(
              bool all,
              AllInBlocks(set, in_block, In(set, o_.rank), bytes, c * esize));
          if (all) return AllreduceInBlocks(set, data, count, type, op, post);
        }
        // This rank's share of the chunk, over every rank's slot in rank
        // order, into the shared result.
        const size_t lo = c * o_.rank / o_.size,
                     hi = c * (o_.rank + 1) / o_.size;
        if (hi > lo) {
          // Slot 0 op slot 1 straight into the result (no copy first),
          // then the others; scaled while the share is in cache.
          uint8_t* acc = Out(set) + lo * esize;
          ReduceBuffers(type, op, acc, In(set, 0) + lo * esize,
                        In(set, 1) + lo * esize, hi - lo);
          for (int q = 2; q < o_.size; ++q) {
            ReduceBuffers(type, op, acc, acc, In(set, q) + lo * esize, hi - lo);
          }
          if (post != 1.0) ScaleBuffer(type, acc, hi - lo, post);
        }
        HVD_RETURN_IF_ERROR(seg_->Barrier("allreduce"));
        std::memcpy(bytes + off * esize, Out(set), c * esize);
      }
      return Status::Ok();
    });
  }

  Status Allgatherv(const void* in, void* out,
                    const std::vector<size_t>& bytes) override {
    if (bytes.size() != static_cast<size_t>(o_.size)) {
      return Status::InvalidArgument("allgatherv", "needs one size per rank");
    }
    return Run("allgatherv", [&]() -> Status {
      size_t most = *std::max_element(bytes.begin(), bytes.end());
      std::vector<size_t> at(o_.size, 0);
      for (int q = 1; q < o_.size; ++q) at[q] = at[q - 1] + bytes[q - 1];
      const uint8_t* mine = static_cast<const uint8_t*>(in);
      uint8_t* dst = static_cast<uint8_t*>(out);
      for (size_t off = 0; off < most || (most == 0 && off == 0);
           off += o_.slot_bytes) {
        if (most == 0) break;
        const int set = NextSet();
        if (off < bytes[o_.rank]) {
          std::memcpy(In(set, o_.rank), mine + off,
                      std::min(o_.slot_bytes, bytes[o_.rank] - off));
        }
        HVD_RETURN_IF_ERROR(seg_->Barrier("allgatherv"));
        for (int q = 0; q < o_.size; ++q) {
          if (off < bytes[q]) {
            std::memcpy(dst + at[q] + off, In(set, q),
                        std::min(o_.slot_bytes, bytes[q] - off));
          }
        }
      }
      return Status::Ok();
    });
  }

  Status Broadcast(void* data, size_t bytes, int root) override {
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
        if (o_.rank == root) std::memcpy(In(set, root), p + off, c);
        HVD_RETURN_IF_ERROR(seg_->Barrier("broadcast"));
        if (o_.rank != root) std::memcpy(p + off, In(set, root), c);
      }
      return Status::Ok();
    });
  }

  Status Alltoallv(const void* in, const std::vector<size_t>& send_bytes,
                   void* out, const std::vector<size_t>& recv_bytes) override {
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
            std::memcpy(In(set, o_.rank) + d * piece, src + sent_at[d] + off,
                        std::min(piece, send_bytes[d] - off));
          }
          more |= off + piece < send_bytes[d];
        }
        seg_->state(o_.rank).more[set].store(more, std::memory_order_relaxed);
        HVD_RETURN_IF_ERROR(seg_->Barrier("alltoallv"));
        bool anyone = false;
        for (size_t q = 0; q < n; ++q) {
          if (off < recv_bytes[q]) {
            std::memcpy(dst + recv_at[q] + off, In(set, q) + o_.rank * piece,
                        std::min(piece, recv_bytes[q] - off));
          }
          anyone |=
              seg_->state(q).more[set].load(std::memory_order_relaxed) != 0;
        }
        if (!anyone) break;
      }
      return Status::Ok();
    });
  }

  Status Reducescatter(const void* in, void* out,
                       const std::vector<size_t>& counts, DataType type,
                       ReduceOp op) override {
    if (counts.size() != static_cast<size_t>(o_.size)) {
      return Status::InvalidArgument("reducescatter",
                                     "needs one count per rank");
    }
    size_t total = 0, offset = 0;
    for (int r = 0; r < o_.size; ++r) {
      if (r < o_.rank) offset += counts[r];
      total += counts[r];
    }
    const size_t esize = DataTypeSize(type);
    if (o_.size == 1) {
      if (total) std::memcpy(out, in, total * esize);
      return Status::Ok();
    }
    if (total == 0) return Status::Ok();
    // A true reduce-scatter: per chunk, every rank copies its input in,
    // then reduces only the part of its own block that falls in the chunk,
    // straight into `out` (one barrier per chunk; the alternating sets keep
    // the next chunk from overwriting what a slow rank still reads).
    return Run("reducescatter", [&]() -> Status {
      const size_t per_chunk = o_.slot_bytes / esize;
      const uint8_t* src = static_cast<const uint8_t*>(in);
      uint8_t* dst = static_cast<uint8_t*>(out);
      const size_t lo_mine = offset, hi_mine = offset + counts[o_.rank];
      for (size_t off = 0; off < total; off += per_chunk) {
        const size_t c = std::min(per_chunk, total - off);
        const int set = NextSet();
        std::memcpy(In(set, o_.rank), src + off * esize, c * esize);
        HVD_RETURN_IF_ERROR(seg_->Barrier("reducescatter"));
        const size_t lo = std::max(lo_mine, off),
                     hi = std::min(hi_mine, off + c);
        if (hi > lo) {
          uint8_t* acc = dst + (lo - lo_mine) * esize;
          const size_t at = (lo - off) * esize;
          std::memcpy(acc, In(set, 0) + at, (hi - lo) * esize);
          for (int q = 1; q < o_.size; ++q) {
            ReduceBuffers(type, op, acc, acc, In(set, q) + at, hi - lo);
          }
        }
      }
      return Status::Ok();
    });
  }

  void SetSingleCopy(bool on) override { single_copy_on_ = on; }

  Status Barrier() override {
    if (o_.size == 1) return Status::Ok();
    return Run("barrier", [&] { return seg_->Barrier("barrier"); });
  }

 private:
  // Two ranks: each copies its chunk into its slot and, after one barrier,
  // reduces the whole chunk (rank 0's part op rank 1's, the same bits on
  // both) straight into its own buffer. Each rank takes in the peer's whole
  // chunk, as much as the reduce-scatter and allgather halves of the
  // general path do together, but with one barrier per chunk instead of
  // two and no copy out of a shared result.
  Status AllreducePair(void* data, size_t count, DataType type, ReduceOp op,
                       double post, bool in_block) {
    const size_t esize = DataTypeSize(type);
    // Chunks of half a slot, so that even the largest take turns between
    // two places (SlotOffset): 1 to 64 MiB about 4 % faster than whole
    // slots.
    const size_t per_chunk = std::max<size_t>(o_.slot_bytes / 2 / esize, 1);
    const int peer = 1 - o_.rank;
    uint8_t* bytes = static_cast<uint8_t*>(data);
    for (size_t off = 0; off < count; off += per_chunk) {
      const size_t c = std::min(per_chunk, count - off);
      const size_t at = SlotOffset(c * esize);
      const int set = NextSet();
      uint8_t* mine = bytes + off * esize;
      uint8_t* slot = In(set, o_.rank) + at;
      if (off > 0 || !in_block) std::memcpy(slot, mine, c * esize);
      HVD_RETURN_IF_ERROR(seg_->Barrier("allreduce"));
      if (off == 0) {
        HVD_ASSIGN_OR_RETURN(bool all,
                             AllInBlocks(set, in_block, slot, mine, c * esize));
        if (all) return AllreduceInBlocks(set, data, count, type, op, post);
      }
      // This rank's part is still in its buffer: the peer reads the slot.
      const uint8_t* theirs = In(set, peer) + at;
      ReduceBuffers(type, op, mine, o_.rank == 0 ? mine : theirs,
                    o_.rank == 0 ? theirs : mine, c);
      if (post != 1.0) ScaleBuffer(type, mine, c, post);
    }
    return Status::Ok();
  }

  // Single copy: every rank publishes its buffer's address; each reduces
  // its share of the elements, reading the peers' parts of it straight
  // from their buffers (in rank order, the same bits as the two-copy
  // path), into its own buffer; then each reads the others' reduced
  // shares into its buffer. The last barrier keeps a buffer in place
  // until no peer reads it any more.
  Status AllreduceDirect(void* data, size_t count, DataType type, ReduceOp op,
                         double post) {
    const size_t esize = DataTypeSize(type);
    uint8_t* mine = static_cast<uint8_t*>(data);
    const int set = NextSet();
    const int n = o_.size;
    seg_->state(o_.rank).buffer[set].store(reinterpret_cast<uintptr_t>(data),
                                           std::memory_order_release);
    HVD_RETURN_IF_ERROR(seg_->Barrier("allreduce"));
    if (EveryBufferInABlock(set)) {
      return AllreduceInBlocks(set, data, count, type, op, post);
    }
    g_paths.single_copy.fetch_add(1, std::memory_order_relaxed);
    for (int q = 0; q < n; ++q) {
      peer_buffer_[q] =
          seg_->state(q).buffer[set].load(std::memory_order_acquire);
    }
    auto read = [&](int q, size_t at, void* to, size_t bytes) -> Status {
      if (int err = ReadPeer(peer_pid_[q], peer_buffer_[q] + at, to, bytes);
          err != 0) {
        return Status::Unavailable(
            "allreduce", "reading local rank " + std::to_string(q) +
                             "'s buffer failed: " + std::strerror(err));
      }
      return Status::Ok();
    };
    const size_t piece = std::max<size_t>(kPieceBytes / esize, 1);
    if (scratch_.size() < 2 * piece * esize) scratch_.resize(2 * piece * esize);
    uint8_t* acc_buf = scratch_.data();
    uint8_t* tmp = scratch_.data() + piece * esize;
    const size_t lo = count * o_.rank / n, hi = count * (o_.rank + 1) / n;
    for (size_t at = lo; at < hi; at += piece) {
      const size_t c = std::min(piece, hi - at);
      uint8_t* out = mine + at * esize;
      // acc = part 0 op part 1 op ...; the last step writes into `out`.
      uint8_t* acc = o_.rank == 0 ? out : acc_buf;
      if (o_.rank != 0)
        HVD_RETURN_IF_ERROR(read(0, at * esize, acc, c * esize));
      for (int q = 1; q < n; ++q) {
        const uint8_t* part = out;
        if (q != o_.rank) {
          HVD_RETURN_IF_ERROR(read(q, at * esize, tmp, c * esize));
          part = tmp;
        }
        ReduceBuffers(type, op, q == n - 1 ? out : acc, acc, part, c);
      }
      if (post != 1.0) ScaleBuffer(type, out, c, post);
    }
    HVD_RETURN_IF_ERROR(seg_->Barrier("allreduce"));
    for (int q = 0; q < n; ++q) {
      if (q == o_.rank) continue;
      const size_t qlo = count * q / n, qhi = count * (q + 1) / n;
      // In pieces: one read of a whole share pins all its pages at once
      // and runs at half the speed here.
      for (size_t at = qlo * esize; at < qhi * esize; at += kPieceBytes) {
        HVD_RETURN_IF_ERROR(
            read(q, at, mine + at, std::min(kPieceBytes, qhi * esize - at)));
      }
    }
    return seg_->Barrier("allreduce");
  }

  // Publishes for data set `set` the block this rank's buffer lies in (or
  // that it lies in none); whether it does.
  bool PublishBlock(int set, const std::optional<ShmBlock>& b) {
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

  // What rank q published for `set` (after the barrier that follows).
  std::optional<ShmBlock> PeerBlock(int set, int q) {
    const ShmRankState& s = seg_->state(q);
    const uint64_t id = s.block_id[set].load(std::memory_order_relaxed);
    if (id == 0) return std::nullopt;
    return ShmBlock{id, s.block_fd[set].load(std::memory_order_relaxed),
                    s.block_bytes[set].load(std::memory_order_relaxed),
                    s.block_offset[set].load(std::memory_order_relaxed)};
  }

  // How many ranks published a block for `set` (after its barrier).
  int BuffersInBlocks(int set) {
    if (!blocks_) return 0;
    int n = 0;
    for (int q = 0; q < o_.size; ++q) {
      n += seg_->state(q).block_id[set].load(std::memory_order_relaxed) != 0;
    }
    return n;
  }
  bool EveryBufferInABlock(int set) { return BuffersInBlocks(set) == o_.size; }

  // After the first chunk's barrier of a path through the slots: whether
  // every rank's buffer lies in a block (then the caller reduces between
  // the blocks). If only some do, those put the chunk they held back into
  // their slots now, and every rank passes one more barrier (every rank
  // sees the same blocks, so every rank takes it).
  StatusOr<bool> AllInBlocks(int set, bool in_block, uint8_t* slot,
                             const uint8_t* chunk, size_t bytes) {
    const int in_blocks = BuffersInBlocks(set);
    if (in_blocks == o_.size) return true;
    if (in_blocks == 0) return false;
    if (in_block) std::memcpy(slot, chunk, bytes);
    HVD_RETURN_IF_ERROR(seg_->Barrier("allreduce"));
    return false;
  }

  // Every rank's buffer lies in a shared block, mapped here: each rank
  // reduces its share of the elements over every rank's buffer in rank
  // order, and writes the result into every buffer. No copy through the
  // segment or the kernel; two barriers in all (the one before, which
  // published the blocks, and the one after, which keeps each buffer in
  // place until every peer has written its share into it).
  Status AllreduceInBlocks(int set, void* data, size_t count, DataType type,
                           ReduceOp op, double post) {
    const size_t esize = DataTypeSize(type);
    const int n = o_.size;
    block_base_.resize(n);
    for (int q = 0; q < n; ++q) {
      if (q == o_.rank) {
        block_base_[q] = static_cast<uint8_t*>(data);
        continue;
      }
      std::optional<ShmBlock> b = PeerBlock(set, q);
      StatusOr<uint8_t*> base = peer_blocks_.Map(peer_pid_[q], *b);
      if (!base.ok()) {
        return Status::Unavailable(
            "allreduce", "mapping local rank " + std::to_string(q) +
                             "'s shared buffer: " + base.status().message());
      }
      block_base_[q] = *base + b->offset;
    }
    g_paths.shared_buffers.fetch_add(1, std::memory_order_relaxed);
    if (!said_blocks_ && o_.rank == 0) {
      HVD_LOG(Debug) << "shared memory: an allreduce straight between the "
                        "ranks' shared buffers";
    }
    said_blocks_ = true;
    const size_t piece = std::max<size_t>(kBlockPieceBytes / esize, 1);
    if (n > 2 && scratch_.size() < piece * esize)
      scratch_.resize(piece * esize);
    const size_t lo = count * o_.rank / n, hi = count * (o_.rank + 1) / n;
    for (size_t at = lo; at < hi; at += piece) {
      const size_t c = std::min(piece, hi - at), off = at * esize;
      uint8_t* out = block_base_[o_.rank] + off;
      // part 0 op part 1 op ...: through scratch while this rank's own
      // part is still to be read, the last step into its buffer.
      for (int q = 1; q < n; ++q) {
        uint8_t* dst = q == n - 1 ? out : scratch_.data();
        const uint8_t* acc = q == 1 ? block_base_[0] + off : scratch_.data();
        ReduceBuffers(type, op, dst, acc, block_base_[q] + off, c);
      }
      if (post != 1.0) ScaleBuffer(type, out, c, post);
      for (int q = 0; q < n; ++q) {
        if (q != o_.rank) std::memcpy(block_base_[q] + off, out, c * esize);
      }
    }
    return seg_->Barrier("allreduce");
  }

  template <typename F>
  Status Run(const char* what, F&& body) {
    if (!broken_.ok()) return broken_;
    Status s = body();
    if (!s.ok()) {
      broken_ = Status::Unavailable(
          "local rank " + std::to_string(o_.rank) + ": shared memory " + what,
          s.message());
    }
    return s.ok() ? s : broken_;
  }

  // Where in its slot a chunk of `bytes` goes (the pair path): a chunk
  // smaller than the slot moves through it from one chunk to the next
  // (whole pages), so that a rank writes lines its peer read longest ago
  // rather than lines still in the peer's cache, which each write must
  // first take back (256 KiB: 30 -> 26 us, and steadier). Every rank
  // counts chunks alike; call before NextSet.
  size_t SlotOffset(size_t bytes) const {
    const size_t span = (bytes + 4095) / 4096 * 4096;
    const size_t places = o_.slot_bytes / span;
    return places > 1 ? (set_counter_ / 2 % places) * span : 0;
  }

  // The data sets alternate: a phase may overwrite set s only when every
  // rank has passed the barrier after the phase that last read it.
  int NextSet() { return static_cast<int>(set_counter_++ & 1); }
  uint8_t* In(int set, int rank) const {
    return data_ +
           (static_cast<size_t>(set) * (o_.size + 1) + rank) * o_.slot_bytes;
  }
  uint8_t* Out(int set) const { return In(set, o_.size); }

  const ShmOptions o_;
  std::unique_ptr<ShmSegment> seg_;
  uint8_t* data_;
  uint64_t set_counter_ = 0;
  Status broken_;
  // Single copy: on when every rank of the host can read its peers.
  bool direct_ = false;
  bool single_copy_on_ = true;  // autotune's choice
  uint64_t probe_ = 0;
  std::vector<pid_t> peer_pid_;
  std::vector<uint64_t> peer_buffer_;  // this call's, by local rank
  std::vector<uint8_t> scratch_;
  // Shared blocks: on when every rank of the host maps its peers' blocks.
  bool blocks_ = false;
  bool said_blocks_ = false;
  ShmPeerBlocks peer_blocks_;
  std::vector<uint8_t*> block_base_;  // this call's, by local rank
};

}  // namespace

ShmPaths ShmAllreducePaths() {
  return {g_paths.shared_buffers.load(std::memory_order_relaxed),
          g_paths.single_copy.load(std::memory_order_relaxed)};
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
