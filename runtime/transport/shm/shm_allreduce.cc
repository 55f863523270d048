// Allreduce through shared memory: the paths by size and by where the
// buffers lie (ARCHITECTURE.md, "Shared memory's allreduce").
#include <algorithm>
#include <atomic>
#include <cstring>

#include "common/logging.h"
#include "runtime/transport/shm/shm_backend_impl.h"

namespace hvd::runtime {
namespace {

// How often each path ran, for tests.
struct {
  std::atomic<uint64_t> shared_buffers{0}, single_copy{0}, pieces{0};
} g_paths;

}  // namespace

Status ShmBackend::Allreduce(void* data, size_t count, DataType type,
                             ReduceOp op) {
  return AllreduceScaled(data, count, type, op, 1.0);
}

Status ShmBackend::AllreduceScaled(void* data, size_t count, DataType type,
                                   ReduceOp op, double post) {
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
  const Piece whole{data, count};
  if (o_.size == 2) {
    return Run("allreduce", [&] {
      return AllreducePair(&whole, 1, count, type, op, post,
                           Blocks{true, in_block});
    });
  }
  return Run("allreduce", [&] {
    return AllreduceSlots(&whole, 1, count, type, op, post,
                          Blocks{true, in_block});
  });
}

Status ShmBackend::AllreducePieces(const std::vector<Piece>& pieces,
                                   DataType type, ReduceOp op, double post) {
  size_t count = 0;
  for (const Piece& p : pieces) count += p.count;
  if (count == 0) return Status::Ok();
  if (o_.size == 1) {
    if (post == 1.0) return Status::Ok();
    for (const Piece& p : pieces) ScaleBuffer(type, p.data, p.count, post);
    return Status::Ok();
  }
  g_paths.pieces.fetch_add(1, std::memory_order_relaxed);
  // No block is published: every rank of the host takes this path for the
  // same fused group, so nobody looks.
  const Blocks none{false, false};
  return Run("allreduce", [&] {
    return o_.size == 2 ? AllreducePair(pieces.data(), pieces.size(), count,
                                        type, op, post, none)
                        : AllreduceSlots(pieces.data(), pieces.size(), count,
                                         type, op, post, none);
  });
}

Status ShmBackend::AllreduceSlots(const Piece* pieces, size_t npieces,
                                  size_t count, DataType type, ReduceOp op,
                                  double post, Blocks blocks) {
  const size_t esize = DataTypeSize(type);
  const size_t per_chunk = o_.slot_bytes / esize;
  PieceWalk gather(pieces, npieces, esize);
  for (size_t off = 0; off < count; off += per_chunk) {
    const size_t c = std::min(per_chunk, count - off);
    const int set = NextSet();
    uint8_t* slot = In(set, o_.rank);
    PieceWalk scatter = gather;
    HVD_ASSIGN_OR_RETURN(bool all, FillSlot(gather, off == 0, c * esize, set,
                                            slot, pieces[0].data, blocks));
    if (all) {
      return AllreduceInBlocks(set, pieces[0].data, count, type, op, post);
    }
    // This rank's share of the chunk, over every rank's slot in rank
    // order, into the shared result.
    const size_t lo = c * o_.rank / o_.size, hi = c * (o_.rank + 1) / o_.size;
    if (hi > lo) {
      // Slot 0 op slot 1 straight into the result (no copy first),
      // then the others; scaled while the share is in cache.
      uint8_t* acc = Out(set) + lo * esize;
      for (int q = 1; q < o_.size; ++q) {
        const uint8_t* from = q == 1 ? In(set, 0) + lo * esize : acc;
        ReduceScaleBuffers(type, op, acc, from, In(set, q) + lo * esize,
                           hi - lo, q == o_.size - 1 ? post : 1.0);
      }
    }
    HVD_RETURN_IF_ERROR(seg_->Barrier("allreduce"));
    scatter.CopyIn(c * esize, Out(set));
  }
  return Status::Ok();
}

Status ShmBackend::AllreducePair(const Piece* pieces, size_t npieces,
                                 size_t count, DataType type, ReduceOp op,
                                 double post, Blocks blocks) {
  const size_t esize = DataTypeSize(type);
  // Chunks of half a slot, so that even the largest take turns between
  // two places (SlotOffset): 1 to 64 MiB about 4 % faster than whole
  // slots.
  const size_t per_chunk = std::max<size_t>(o_.slot_bytes / 2 / esize, 1);
  const int peer = 1 - o_.rank;
  PieceWalk gather(pieces, npieces, esize);
  for (size_t off = 0; off < count; off += per_chunk) {
    const size_t c = std::min(per_chunk, count - off);
    const size_t at = SlotOffset(c * esize);
    const int set = NextSet();
    uint8_t* slot = In(set, o_.rank) + at;
    PieceWalk reduce = gather;
    HVD_ASSIGN_OR_RETURN(bool all, FillSlot(gather, off == 0, c * esize, set,
                                            slot, pieces[0].data, blocks));
    if (all) {
      return AllreduceInBlocks(set, pieces[0].data, count, type, op, post);
    }
    // This rank's part is still in its buffers: the peer reads the slot.
    const uint8_t* theirs = In(set, peer) + at;
    reduce.Each(c * esize, [&](uint8_t* mine, size_t bytes, size_t from) {
      const size_t n = bytes / esize;
      ReduceScaleBuffers(type, op, mine, o_.rank == 0 ? mine : theirs + from,
                         o_.rank == 0 ? theirs + from : mine, n, post);
    });
  }
  return Status::Ok();
}

Status ShmBackend::AllreduceDirect(void* data, size_t count, DataType type,
                                   ReduceOp op, double post) {
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
      return Status::Unavailable("allreduce",
                                 "reading local rank " + std::to_string(q) +
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
    if (o_.rank != 0) HVD_RETURN_IF_ERROR(read(0, at * esize, acc, c * esize));
    for (int q = 1; q < n; ++q) {
      const uint8_t* part = out;
      if (q != o_.rank) {
        HVD_RETURN_IF_ERROR(read(q, at * esize, tmp, c * esize));
        part = tmp;
      }
      ReduceScaleBuffers(type, op, q == n - 1 ? out : acc, acc, part, c,
                         q == n - 1 ? post : 1.0);
    }
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

StatusOr<bool> ShmBackend::FillSlot(PieceWalk& gather, bool first, size_t bytes,
                                    int set, uint8_t* slot, void* first_piece,
                                    Blocks blocks) {
  if (first && blocks.in_block) {
    gather.Skip(bytes);
  } else {
    gather.CopyOut(bytes, slot);
  }
  HVD_RETURN_IF_ERROR(seg_->Barrier("allreduce"));
  if (!first || !blocks.check) return false;
  return AllInBlocks(set, blocks.in_block, slot,
                     static_cast<uint8_t*>(first_piece), bytes);
}

StatusOr<bool> ShmBackend::AllInBlocks(int set, bool in_block, uint8_t* slot,
                                       const uint8_t* chunk, size_t bytes) {
  const int in_blocks = BuffersInBlocks(set);
  if (in_blocks == o_.size) return true;
  if (in_blocks == 0) return false;
  if (in_block) CopyBytes(slot, chunk, bytes);
  HVD_RETURN_IF_ERROR(seg_->Barrier("allreduce"));
  return false;
}

Status ShmBackend::AllreduceInBlocks(int set, void* data, size_t count,
                                     DataType type, ReduceOp op, double post) {
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
  if (n > 2 && scratch_.size() < piece * esize) scratch_.resize(piece * esize);
  const size_t lo = count * o_.rank / n, hi = count * (o_.rank + 1) / n;
  for (size_t at = lo; at < hi; at += piece) {
    const size_t c = std::min(piece, hi - at), off = at * esize;
    uint8_t* out = block_base_[o_.rank] + off;
    // part 0 op part 1 op ...: through scratch while this rank's own
    // part is still to be read, the last step into its buffer.
    for (int q = 1; q < n; ++q) {
      uint8_t* dst = q == n - 1 ? out : scratch_.data();
      const uint8_t* acc = q == 1 ? block_base_[0] + off : scratch_.data();
      ReduceScaleBuffers(type, op, dst, acc, block_base_[q] + off, c,
                         q == n - 1 ? post : 1.0);
    }
    for (int q = 0; q < n; ++q) {
      if (q != o_.rank) CopyBytes(block_base_[q] + off, out, c * esize);
    }
  }
  return seg_->Barrier("allreduce");
}

ShmPaths ShmAllreducePaths() {
  return {g_paths.shared_buffers.load(std::memory_order_relaxed),
          g_paths.single_copy.load(std::memory_order_relaxed),
          g_paths.pieces.load(std::memory_order_relaxed)};
}

}  // namespace hvd::runtime
