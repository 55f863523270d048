// The narrow interface every collective backend offers, on raw buffers.
// Backends know nothing about tensors, names or negotiation: the engine
// hands them fused buffers. Every call is collective: all ranks make it, in
// the same order, with matching sizes. Errors name this rank and the
// operation; after a failure (a dead peer, a timeout) the backend stays
// failed and every later call returns the first error at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/copy_bytes.h"
#include "common/status.h"
#include "runtime/dtype.h"

namespace hvd::runtime {

// One tensor of a fused allreduce: `count` elements at `data`.
struct Piece {
  void* data;
  size_t count;
};

// Copies the pieces end to end into `into`, or back out of `from`.
inline void PackPieces(const std::vector<Piece>& pieces, size_t esize,
                       uint8_t* into) {
  for (const Piece& p : pieces) {
    if (p.count) CopyBytes(into, p.data, p.count * esize);
    into += p.count * esize;
  }
}
inline void UnpackPieces(const std::vector<Piece>& pieces, size_t esize,
                         const uint8_t* from) {
  for (const Piece& p : pieces) {
    if (p.count) CopyBytes(p.data, from, p.count * esize);
    from += p.count * esize;
  }
}

class Backend {
 public:
  virtual ~Backend() = default;

  // In place: data[i] = op over ranks of data[i], `count` elements.
  virtual Status Allreduce(void* data, size_t count, DataType type,
                           ReduceOp op) = 0;

  // Rank r contributes `bytes[r]` bytes (its own from `in`); `out` receives
  // every rank's bytes in rank order (sum of `bytes`).
  virtual Status Allgatherv(const void* in, void* out,
                            const std::vector<size_t>& bytes) = 0;

  // Copies `bytes` bytes of rank `root`'s buffer into every rank's.
  virtual Status Broadcast(void* data, size_t bytes, int root) = 0;

  // Sends send_bytes[r] bytes (consecutive in `in`) to rank r and receives
  // recv_bytes[r] from rank r (consecutive in `out`, rank order).
  virtual Status Alltoallv(const void* in,
                           const std::vector<size_t>& send_bytes, void* out,
                           const std::vector<size_t>& recv_bytes) = 0;

  // Reduces `in` (the sum of `counts` elements) over ranks and leaves rank
  // r's block (counts[r] elements, at offset sum(counts[0..r))) in `out`.
  virtual Status Reducescatter(const void* in, void* out,
                               const std::vector<size_t>& counts, DataType type,
                               ReduceOp op) = 0;

  virtual Status Barrier() = 0;

  // Whether calls may return before their work is done: a device backend
  // with several streams (HOROVOD_NUM_NCCL_STREAMS) queues each call on the
  // next stream so that the calls of one cycle overlap. The caller must then
  // Flush before it reads any result or hands it on. Calls that need their
  // own results (the backend's scratch, a barrier) wait for themselves.
  virtual bool Defers() const { return false; }
  // Waits for every call made so far; the first error of any of them.
  virtual Status Flush() { return Status::Ok(); }

  // In place: the allreduce, then every element times `post` (the same
  // bits as Allreduce followed by ScaleBuffer). Backends that reduce shares
  // override it to scale each share while it is hot.
  virtual Status AllreduceScaled(void* data, size_t count, DataType type,
                                 ReduceOp op, double post) {
    HVD_RETURN_IF_ERROR(Allreduce(data, count, type, op));
    if (post != 1.0) ScaleBuffer(type, data, count, post);
    return Status::Ok();
  }

  // Whether AllreducePieces reduces the pieces where they lie; when not,
  // the engine packs a fused group into its fusion buffer instead (which
  // may lie in memory the backend reads faster).
  virtual bool ReducesPieces() const { return false; }
  // In place: the pieces allreduced as if they lay end to end in one
  // buffer, then scaled by `post`. Every rank passes pieces of the same
  // sizes. This default packs them into a buffer of its own.
  virtual Status AllreducePieces(const std::vector<Piece>& pieces,
                                 DataType type, ReduceOp op, double post) {
    const size_t esize = DataTypeSize(type);
    size_t count = 0;
    for (const Piece& p : pieces) count += p.count;
    std::vector<uint8_t> packed(count * esize);
    PackPieces(pieces, esize, packed.data());
    HVD_RETURN_IF_ERROR(AllreduceScaled(packed.data(), count, type, op, post));
    UnpackPieces(pieces, esize, packed.data());
    return Status::Ok();
  }

  // In place: data[i] = sum over ranks of factor * data[i]. Backends whose
  // memory the host cannot touch (device memory) override the host-side
  // scaling of this default.
  virtual Status ScaledSum(void* data, size_t count, DataType type,
                           double factor) {
    ScaleBuffer(type, data, count, factor);
    return Allreduce(data, count, type, ReduceOp::kSum);
  }
};

// Transport-specific choices autotune makes, each a side interface of its
// own: only the backends that have the knob implement it beside Backend,
// and BackendSet finds it on the backend in use (every rank sets it at the
// same cycle).
class HierarchicalKnob {
 public:
  virtual ~HierarchicalKnob() = default;
  // Whether allreduce / allgather go host by host.
  virtual void SetHierarchical(bool allreduce, bool allgather) = 0;
};

class SingleCopyKnob {
 public:
  virtual ~SingleCopyKnob() = default;
  // Whether large allreduces read the peers' buffers directly (shared
  // memory's single copy).
  virtual void SetSingleCopy(bool on) = 0;
};

class TcpKnob {
 public:
  virtual ~TcpKnob() = default;
  // Whether large TCP allreduce steps spread over several connections to
  // each peer (HOROVOD_TCP_STREAMS) or keep to one.
  virtual void SetSeveralStreams(bool on) = 0;
  // Whether the TCP collectives take their fewer-trip algorithms (the
  // doubling, the halving, the tree) up to 4 times their crossovers
  // (collective_algorithm.h).
  virtual void SetWideCrossovers(bool on) = 0;
};

}  // namespace hvd::runtime
