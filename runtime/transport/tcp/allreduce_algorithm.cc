#include "runtime/transport/tcp/allreduce_algorithm.h"

namespace hvd::runtime {

const char* AllreduceAlgorithmName(AllreduceAlgorithm a) {
  switch (a) {
    case AllreduceAlgorithm::kDoubling:
      return "recursive doubling";
    case AllreduceAlgorithm::kHalving:
      return "recursive halving";
    case AllreduceAlgorithm::kRing:
      return "ring";
  }
  return "?";
}

AllreduceAlgorithm ChooseAllreduce(size_t bytes, int ranks,
                                   const AllreduceCrossovers& c) {
  if (bytes <= c.doubling_bytes) return AllreduceAlgorithm::kDoubling;
  // Two or three ranks: the halving is the ring with a fold, no fewer
  // trips.
  if (ranks > 3 && bytes <= c.halving_bytes)
    return AllreduceAlgorithm::kHalving;
  return AllreduceAlgorithm::kRing;
}

}  // namespace hvd::runtime
