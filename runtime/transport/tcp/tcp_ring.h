// The allreduce of the TCP path on sockets of its own: a ring
// (reduce-scatter, then allgather) whose every step sends one block to the
// right neighbour while it receives one from the left, on the calling
// thread, reducing what has arrived while the rest is still in flight.
//
// Why not Gloo's: Gloo's ring cuts a buffer into 8 segments per rank (4 KiB
// each at 64 KiB on 2 ranks), and every segment costs a send-ready /
// recv-ready / data exchange and two hand-offs between Gloo's device thread
// and the caller: at 64 KiB to 1 MiB that, not the wire, is the time (a
// strace of one rank shows 48-byte notices around every 4 KiB write and a
// futex wake per segment).
//
// Not thread-safe: one collective at a time, as every Backend.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "runtime/dtype.h"
#include "runtime/store.h"
#include "runtime/transport/tcp/collective_algorithm.h"
#include "runtime/transport/tcp/doubling.h"
#include "runtime/transport/tcp/tcp_mesh.h"
#include "runtime/transport/tcp/tcp_options.h"
#include "runtime/transport/tcp/tcp_steps.h"

namespace hvd::runtime {

struct TcpRingOptions : TcpOptions {
  // Sockets to each neighbour. A step's block of at least `stream_bytes`
  // per stream is cut into one slice per stream: one TCP flow rarely fills
  // a fast link, several together can.
  int streams = 1;
  size_t stream_bytes = size_t{1} << 20;
  // How long a step retries its sockets before it sleeps in poll: on a
  // virtual machine a wake-up from poll costs tens of microseconds, more
  // than a small block's whole trip (as ControlOptions::spin).
  std::chrono::microseconds spin{50};
  // Which sizes take the doubling, the halving and the ring
  // (collective_algorithm.h).
  TcpCrossovers crossovers;
};

class TcpRing {
 public:
  // Connects to the ring neighbours through `store` (keys under "ring/").
  static StatusOr<std::unique_ptr<TcpRing>> Connect(
      const TcpRingOptions& options, Store& store);

  // In place: data[i] = op over ranks of data[i]. Collective. After a
  // failure every later call returns the first error.
  Status Allreduce(void* data, size_t count, DataType type, ReduceOp op);
  // As Backend's. Each runs what ChooseTcpAlgorithm picks.
  Status Allgatherv(const void* in, void* out,
                    const std::vector<size_t>& bytes);
  Status Broadcast(void* data, size_t bytes, int root);
  Status Reducescatter(const void* in, void* out,
                       const std::vector<size_t>& counts, DataType type,
                       ReduceOp op);
  Status Barrier();
  // The first alltoall connects this rank to the peers it has no sockets
  // to yet (every other, as many streams each), through `store` (keys
  // under "a2a/"): every rank makes that call alike. A job that never
  // runs one holds only its ring's and doubling's sockets.
  Status Alltoallv(const void* in, const std::vector<size_t>& send_bytes,
                   void* out, const std::vector<size_t>& recv_bytes,
                   Store& store);
  // Sockets this rank holds, every stream counted (tests).
  int Sockets() const { return steps_.Sockets(); }
  // Autotune's choice (every rank makes it in the same cycle): the
  // crossovers as given, or each 4 times as far (0 stays 0: its peers
  // may not be connected).
  void SetWideCrossovers(bool on) {
    const int scale = on ? 4 : 1;
    crossovers_.doubling_bytes = options_.crossovers.doubling_bytes * scale;
    crossovers_.halving_bytes = options_.crossovers.halving_bytes * scale;
  }

  // Autotune's choice (every rank makes it in the same cycle, since both
  // ends of a step must cut it alike): large steps over the streams, or
  // everything over the first.
  void SetSeveralStreams(bool on) { steps_.SetSeveralStreams(on); }
  // The streams a step of `bytes` goes over.
  int StreamsFor(size_t bytes) const { return steps_.StreamsFor(bytes); }

 private:
  TcpRing(const TcpRingOptions& options, std::vector<std::vector<Fd>> mesh);
  Status Ring(uint8_t* data, size_t count, DataType type, ReduceOp op);
  // Reduce-scatter by recursive halving, then allgather by recursive
  // doubling, after the same fold as Doubling's: 2 log2(n) steps, each
  // rank sending 2(n - 1)/n of the buffer in all, as the ring does in
  // 2(n - 1). Every rank ends with the same values: each element is
  // reduced once, by the rank that keeps it, and then copied.
  Status Halving(uint8_t* data, size_t count, DataType type, ReduceOp op);
  // The halving among the ranks below the largest power of two.
  Status HalvingAmong(uint8_t* data, size_t count, DataType type, ReduceOp op);
  // `among()` (an algorithm among the ranks below the largest power of two
  // q <= n) inside the fold: rank q + i hands its buffer to rank i and
  // waits for the result; rank i reduces it in first and sends the result
  // back after (doubling.h).
  template <typename F>
  Status Folded(uint8_t* data, size_t count, DataType type, ReduceOp op,
                F&& among);
  // Recursive doubling (doubling.h): log2(n) steps, each swapping the
  // whole buffer with the rank whose number differs in one bit, against
  // the ring's 2(n - 1) steps of 1/n of it. Fewer trips, more bytes: the
  // choice for small buffers (on 2 ranks it sends the same bytes in one
  // trip instead of two, but reduces all of them, which loses from about
  // 1 MiB). Every rank computes the same values: each pair reduces the
  // same two operands, and the ops are commutative.
  Status Doubling(uint8_t* data, size_t count, DataType type, ReduceOp op);
  // Allgather by recursive doubling: each trip swaps every block gathered
  // so far with the partner (where the ranks past the largest power of two
  // q fold in, a trip's blocks lie in two ranges, the ranks below q and
  // theirs past it: two steps).
  Status GatherDoubling(uint8_t* out, const std::vector<size_t>& offsets);
  // Allgather around the ring: n - 1 trips, a block each.
  Status GatherRing(uint8_t* out, const std::vector<size_t>& offsets);
  // Broadcast down a binomial tree of the doubling's partners, relative to
  // the root (or, for a root past q, the rank it folds into).
  Status Tree(uint8_t* data, size_t bytes, int root);
  // Broadcast along the ring from the root, pipelined: each rank passes a
  // piece on to the right while the next comes in from the left, so every
  // link carries the buffer once and the last rank has it about n pieces
  // after the root began (a tree sends the whole buffer log2(n) times in
  // turn; Gloo's root sends it n - 1 times).
  Status Chain(uint8_t* data, size_t bytes, int root);
  // Sockets to every peer not connected yet (Alltoallv).
  Status ConnectTheRest(Store& store);
  // Alltoall by pairwise exchange (collective_algorithm.h).
  Status Pairwise(const uint8_t* in, const std::vector<size_t>& send_bytes,
                  uint8_t* out, const std::vector<size_t>& recv_bytes);
  // Reduce-scatter around the ring on a copy of the input (work_): n - 1
  // trips, a block each, the block of rank r ending reduced on r.
  Status ScatterRing(uint8_t* work, const std::vector<size_t>& offsets,
                     DataType type, ReduceOp op);
  // acc[from, to) op= the scratch buffer's same bytes, as a step's
  // `arrived`.
  auto ReduceInto(uint8_t* acc, DataType type, ReduceOp op);
  std::string Where() const;

  const TcpRingOptions options_;
  TcpSteps steps_;  // the sockets, and a step's moving of bytes on them
  int left_, right_;
  const DoublingPlan doubling_;
  // The halving's blocks, by step: [lo, mid) and [mid, hi), and whether
  // this rank kept the lower half.
  struct Half {
    size_t lo, mid, hi;
    bool low;
  };
  std::vector<Half> halves_;
  TcpCrossovers crossovers_ = options_.crossovers;  // in use
  std::vector<uint8_t> scratch_;
  std::vector<uint8_t> work_;  // Reducescatter's copy of its input
  Status broken_;
};

}  // namespace hvd::runtime
