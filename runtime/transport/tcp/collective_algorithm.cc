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
    case TcpAlgorithm::kGloo:
      return "Gloo's";
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
      return bytes <= x.halving_bytes ? TcpAlgorithm::kTree
                                      : TcpAlgorithm::kGloo;
    case Collective::kReducescatter:
      return bytes <= x.doubling_bytes ? TcpAlgorithm::kDoubling
                                       : TcpAlgorithm::kRing;
    case Collective::kAlltoall:
      return TcpAlgorithm::kGloo;
    case Collective::kBarrier:
      // The doubling's partners are connected only where some size takes
      // it.
      return x.doubling_bytes > 0 || x.halving_bytes > 0
                 ? TcpAlgorithm::kDoubling
                 : TcpAlgorithm::kGloo;
  }
  return TcpAlgorithm::kGloo;
}

}  // namespace hvd::runtime
