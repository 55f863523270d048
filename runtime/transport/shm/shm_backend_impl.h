// The shared-memory backend's class, for its two files: shm_backend.cc
// (setting up, the probe, the collectives other than allreduce) and
// shm_allreduce.cc (allreduce's paths). Not part of the transport's
// interface (shm_backend.h).
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/copy_bytes.h"
#include "runtime/transport/shm/shm_backend.h"
#include "runtime/transport/shm/shm_heap.h"
#include "runtime/transport/shm/shm_segment.h"

namespace hvd::runtime {

// Single-copy reduction works on pieces this large, so that a peer's piece
// read into scratch is still in cache when it is reduced.
constexpr size_t kPieceBytes = 256 << 10;
// Reducing between shared blocks works on pieces small enough that the
// result is still in cache when it is copied to the peers' buffers.
constexpr size_t kBlockPieceBytes = 64 << 10;

// Reads `bytes` at `remote` in process `pid` into `local` (cross-memory
// attach: one copy, by the kernel). The errno when it fails.
int ReadPeer(pid_t pid, uint64_t remote, void* local, size_t bytes);

// The pieces of a fused allreduce as one run of bytes, walked a span at a
// time (spans are whole elements: every piece is).
class PieceWalk {
 public:
  PieceWalk(const Piece* pieces, size_t n, size_t esize)
      : pieces_(pieces), n_(n), esize_(esize) {}

  // f(where, bytes, from): the next `bytes` of the run, piece by piece;
  // `from` counts from the span's start.
  template <typename F>
  void Each(size_t bytes, F&& f) {
    for (size_t done = 0; done < bytes && i_ < n_;) {
      const size_t size = pieces_[i_].count * esize_;
      const size_t take = std::min(size - at_, bytes - done);
      if (take > 0)
        f(static_cast<uint8_t*>(pieces_[i_].data) + at_, take, done);
      done += take;
      at_ += take;
      if (at_ == size) {
        ++i_;
        at_ = 0;
      }
    }
  }
  void CopyOut(size_t bytes, uint8_t* to) {
    Each(bytes, [to](uint8_t* p, size_t b, size_t from) {
      CopyBytes(to + from, p, b);
    });
  }
  void CopyIn(size_t bytes, const uint8_t* from_buf) {
    Each(bytes, [from_buf](uint8_t* p, size_t b, size_t from) {
      CopyBytes(p, from_buf + from, b);
    });
  }
  void Skip(size_t bytes) {
    Each(bytes, [](uint8_t*, size_t, size_t) {});
  }

 private:
  const Piece* pieces_;
  size_t n_, esize_;
  size_t i_ = 0, at_ = 0;  // the next byte: piece i_, offset at_
};

class ShmBackend final : public Backend, public SingleCopyKnob {
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
  Status ProbeSingleCopy();

  Status Allreduce(void* data, size_t count, DataType type,
                   ReduceOp op) override;

  Status AllreduceScaled(void* data, size_t count, DataType type, ReduceOp op,
                         double post) override;

  Status Allgatherv(const void* in, void* out,
                    const std::vector<size_t>& bytes) override;

  Status Broadcast(void* data, size_t bytes, int root) override;

  Status Alltoallv(const void* in, const std::vector<size_t>& send_bytes,
                   void* out, const std::vector<size_t>& recv_bytes) override;

  Status Reducescatter(const void* in, void* out,
                       const std::vector<size_t>& counts, DataType type,
                       ReduceOp op) override;

  // Fused groups go through the slots straight from and into their
  // tensors: no fusion buffer, and for two ranks no copy out at all.
  bool ReducesPieces() const override { return true; }
  Status AllreducePieces(const std::vector<Piece>& pieces, DataType type,
                         ReduceOp op, double post) override;

  void SetSingleCopy(bool on) override { single_copy_on_ = on; }

  Status Barrier() override;

 private:
  // Whether a path through the slots looks for shared blocks after its
  // first chunk's barrier (`check`: a single buffer whose block, if any,
  // was published), and whether this rank's buffer lies in one.
  struct Blocks {
    bool check;
    bool in_block;
  };

  // Two ranks: each copies its chunk into its slot and, after one barrier,
  // reduces the whole chunk (rank 0's part op rank 1's, the same bits on
  // both) straight into its own buffer. Each rank takes in the peer's whole
  // chunk, as much as the reduce-scatter and allgather halves of the
  // general path do together, but with one barrier per chunk instead of
  // two and no copy out of a shared result. `pieces`: the buffer, or a
  // fused group's tensors walked as one.
  Status AllreducePair(const Piece* pieces, size_t npieces, size_t count,
                       DataType type, ReduceOp op, double post, Blocks blocks);

  // A slot path's chunk of `bytes` into this rank's `slot` (the first
  // held back when this rank's buffer lies in a block), then the barrier;
  // after the first with `blocks.check`, whether every rank's buffer lies
  // in a block (the caller then reduces between them).
  StatusOr<bool> FillSlot(PieceWalk& gather, bool first, size_t bytes, int set,
                          uint8_t* slot, void* first_piece, Blocks blocks);

  // Any number of ranks: each copies its chunk into its slot; after a
  // barrier each reduces its share of the chunk over every slot into the
  // shared result; after another each copies the result out.
  Status AllreduceSlots(const Piece* pieces, size_t npieces, size_t count,
                        DataType type, ReduceOp op, double post, Blocks blocks);

  // Single copy: every rank publishes its buffer's address; each reduces
  // its share of the elements, reading the peers' parts of it straight
  // from their buffers (in rank order, the same bits as the two-copy
  // path), into its own buffer; then each reads the others' reduced
  // shares into its buffer. The last barrier keeps a buffer in place
  // until no peer reads it any more.
  Status AllreduceDirect(void* data, size_t count, DataType type, ReduceOp op,
                         double post);

  // Publishes for data set `set` the block this rank's buffer lies in (or
  // that it lies in none); whether it does.
  bool PublishBlock(int set, const std::optional<ShmBlock>& b);

  // What rank q published for `set` (after the barrier that follows).
  std::optional<ShmBlock> PeerBlock(int set, int q);

  // How many ranks published a block for `set` (after its barrier).
  int BuffersInBlocks(int set);
  bool EveryBufferInABlock(int set) { return BuffersInBlocks(set) == o_.size; }

  // After the first chunk's barrier of a path through the slots: whether
  // every rank's buffer lies in a block (then the caller reduces between
  // the blocks). If only some do, those put the chunk they held back into
  // their slots now, and every rank passes one more barrier (every rank
  // sees the same blocks, so every rank takes it).
  StatusOr<bool> AllInBlocks(int set, bool in_block, uint8_t* slot,
                             const uint8_t* chunk, size_t bytes);

  // Every rank's buffer lies in a shared block, mapped here: each rank
  // reduces its share of the elements over every rank's buffer in rank
  // order, and writes the result into every buffer. No copy through the
  // segment or the kernel; two barriers in all (the one before, which
  // published the blocks, and the one after, which keeps each buffer in
  // place until every peer has written its share into it).
  Status AllreduceInBlocks(int set, void* data, size_t count, DataType type,
                           ReduceOp op, double post);

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

}  // namespace hvd::runtime
