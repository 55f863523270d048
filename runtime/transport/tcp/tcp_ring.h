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

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "runtime/dtype.h"
#include "runtime/store.h"
#include "runtime/transport/tcp/tcp_mesh.h"
#include "runtime/transport/tcp/tcp_options.h"

namespace hvd::runtime {

struct TcpRingOptions : TcpOptions {
  // Sockets to each neighbour. A step's block of at least `stream_bytes`
  // per stream is cut into one slice per stream: one TCP flow rarely fills
  // a fast link, several together can.
  int streams = 1;
  size_t stream_bytes = size_t{1} << 20;
};

class TcpRing {
 public:
  // Connects to the ring neighbours through `store` (keys under "ring/").
  static StatusOr<std::unique_ptr<TcpRing>> Connect(
      const TcpRingOptions& options, Store& store);

  // In place: data[i] = op over ranks of data[i]. Collective. After a
  // failure every later call returns the first error.
  Status Allreduce(void* data, size_t count, DataType type, ReduceOp op);

 private:
  TcpRing(const TcpRingOptions& options, std::vector<std::vector<Fd>> mesh);
  Status Run(uint8_t* data, size_t count, DataType type, ReduceOp op);
  // Sends [out, out + out_bytes) right while receiving in_bytes from the
  // left into `in`, each over StreamsFor(bytes) streams; `arrived(from,
  // to)` is told of each byte range of whole elements that came in.
  template <typename F>
  Status Step(const uint8_t* out, size_t out_bytes, uint8_t* in,
              size_t in_bytes, size_t esize, F&& arrived);
  int StreamsFor(size_t bytes) const;
  // A direction's part on one stream: [begin, end), how far it got, and
  // (received) how far it was reduced.
  struct Slice {
    size_t begin, end, done, reduced;
  };
  void Slices(size_t bytes, size_t esize, std::vector<Slice>* out) const;
  Status TimedOut(int peer) const;
  std::string Where() const;

  const TcpRingOptions options_;
  std::vector<std::vector<Fd>> mesh_;
  int left_, right_;
  std::vector<uint8_t> scratch_;
  std::vector<Slice> sends_, recvs_;  // the step's (Step)
  std::vector<pollfd> fds_;
  Status broken_;
};

}  // namespace hvd::runtime
