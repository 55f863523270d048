// How each collective crosses TCP, from its size and the ranks. Pure;
// every rank picks the same from the same inputs (the sizes of a
// collective agree), so both ends of every step agree on its shape.
//
//   doubling  recursive doubling (doubling.h): log2(n) trips with one
//             partner each. Allreduce: the whole buffer both ways, n/2
//             times the bytes of the others, so small buffers only.
//             Allgather: each trip swaps all the blocks gathered so far,
//             the ring's bytes in log2(n) trips, not n - 1. Reducescatter:
//             the doubling allreduce, each rank keeping its block (small
//             buffers, where the trips are the time). Barrier: a byte's.
//   halving   allreduce by reduce-scatter in recursive halving, then
//             allgather by recursive doubling (Rabenseifner's): 2 log2(n)
//             trips, each rank sending 2(n - 1)/n of the buffer in all, as
//             the ring; mid sizes, where the ring's 2(n - 1) trips are the
//             time
//   ring      n - 1 trips to the neighbours only per phase: large buffers,
//             where the bytes are the time and a neighbour's link is the
//             one least shared. Broadcast: a pipelined chain from the
//             root, every link carrying the buffer once. Barrier: a byte
//             around it, where the doubling's partners are not connected.
//   tree      broadcast down a binomial tree along the doubling's
//             partners: log2(n) trips with the whole buffer (small
//             buffers, up to the doubling's crossover)
//   pairwise  alltoall: n - 1 trips, trip k to rank + k while taking from
//             rank - k, on sockets to every peer connected at the first
//             alltoall (OpenMPI's choice for alltoallv too; Bruck's log2(n)
//             trips need blocks of one size, and an alltoall's split may
//             differ per rank)
//
// Where n is no power of two, the ranks past the largest power of two fold
// into the ranks below first (doubling.h). The crossovers are settings
// (HOROVOD_TCP_DOUBLING_BYTES, HOROVOD_TCP_HALVING_BYTES); 0 turns an
// algorithm off.
#pragma once

#include <cstddef>

namespace hvd::runtime {

enum class Collective {
  kAllreduce,
  kAllgather,
  kBroadcast,
  kReducescatter,
  kAlltoall,
  kBarrier
};

enum class TcpAlgorithm { kDoubling, kHalving, kRing, kTree, kPairwise };

const char* TcpAlgorithmName(TcpAlgorithm a);

struct TcpCrossovers {
  size_t doubling_bytes = size_t{64} << 10;
  size_t halving_bytes = size_t{4} << 20;
};

// `bytes`: the buffer (allreduce, broadcast), everything gathered
// (allgather), the input of all the blocks (reducescatter), what this rank
// sends (alltoall).
TcpAlgorithm ChooseTcpAlgorithm(Collective c, size_t bytes, int ranks,
                                const TcpCrossovers& x);

}  // namespace hvd::runtime
