#include "runtime/transport/tcp/collective_algorithm.h"

namespace hvd::runtime {

const char* TcpAlgorithmName(TcpAlgorithm a) {
  switch (a) {
    case TcpAlgorithm::kDoubling:
      return "recursive doubling";
    case TcpAlgorithm::kHalving:
      return "recursive halving";
    case TcpAlgorithm::kRing:
      return "ring";
    case TcpAlgorithm::kTree:
      return "binomial tree";
    case TcpAlgorithm::kPairwise:
      return "pairwise exchange";
  }
  return "?";
}

TcpAlgorithm ChooseTcpAlgorithm(Collective c, size_t bytes, int ranks,
                                const TcpCrossovers& x) {
  switch (c) {
    case Collective::kAllreduce:
      if (bytes <= x.doubling_bytes) return TcpAlgorithm::kDoubling;
      // Two or three ranks: the halving is the ring with a fold, no fewer
      // trips.
      if (ranks > 3 && bytes <= x.halving_bytes) return TcpAlgorithm::kHalving;
      return TcpAlgorithm::kRing;
    case Collective::kAllgather:
      // The same bytes either way: the doubling's fewer trips win until
      // the buffer is large enough that the least shared link does.
      return bytes <= x.halving_bytes ? TcpAlgorithm::kDoubling
                                      : TcpAlgorithm::kRing;
    case Collective::kBroadcast:
      // The tree's log2(n) trips win while the buffer is small, as the
      // doubling's do; past that the bytes are the time, and the pipelined
      // chain sends them over every link once (at 8 hosts on 1 Gbit/s
      // links, 16 MiB: 150 ms, the tree 465, Gloo's 820).
      return bytes <= x.doubling_bytes ? TcpAlgorithm::kTree
                                       : TcpAlgorithm::kRing;
    case Collective::kReducescatter:
      return bytes <= x.doubling_bytes ? TcpAlgorithm::kDoubling
                                       : TcpAlgorithm::kRing;
    case Collective::kAlltoall:
      return TcpAlgorithm::kPairwise;
    case Collective::kBarrier:
      // An allreduce of one byte: the doubling where its partners are
      // connected (some size takes it), else around the ring.
      return x.doubling_bytes > 0 || x.halving_bytes > 0
                 ? TcpAlgorithm::kDoubling
                 : TcpAlgorithm::kRing;
  }
  return TcpAlgorithm::kRing;
}

}  // namespace hvd::runtime
