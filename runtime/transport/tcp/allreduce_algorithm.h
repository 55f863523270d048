// Which algorithm an allreduce over TCP takes, from its size and the
// ranks. Pure; every rank picks the same from the same inputs (the sizes
// of a collective agree), so both ends of every step agree on its shape.
//
//   doubling  log2(n) trips, each the whole buffer both ways: the fewest
//             trips, n/2 times the bytes of the others; small buffers
//   halving   reduce-scatter by recursive halving, then allgather by
//             recursive doubling (Rabenseifner's): 2 log2(n) trips, each
//             rank sending 2(n - 1)/n of the buffer in all, as the ring;
//             mid sizes, where the ring's 2(n - 1) trips are the time
//   ring      2(n - 1) trips to the neighbours only: large buffers, where
//             the bytes are the time and a neighbour's link is the one
//             least shared
//
// Where n is no power of two, the doubling and the halving first fold the
// ranks past the largest power of two into the ranks below (doubling.h).
#pragma once

#include <cstddef>

namespace hvd::runtime {

enum class AllreduceAlgorithm { kDoubling, kHalving, kRing };

const char* AllreduceAlgorithmName(AllreduceAlgorithm a);

// The crossovers, in bytes (HOROVOD_TCP_DOUBLING_BYTES,
// HOROVOD_TCP_HALVING_BYTES): a buffer of at most `doubling_bytes` takes
// the doubling, then up to `halving_bytes` the halving, then the ring.
struct AllreduceCrossovers {
  size_t doubling_bytes = size_t{64} << 10;
  size_t halving_bytes = size_t{4} << 20;
};

AllreduceAlgorithm ChooseAllreduce(size_t bytes, int ranks,
                                   const AllreduceCrossovers& c);

}  // namespace hvd::runtime
