// Adasum, the adaptive summation of gradients (Maleki et al., 2021), as
// Horovod defines it: two vectors a and b combine as
//
//   adasum(a, b) = (1 - a.b / 2|a|^2) a + (1 - a.b / 2|b|^2) b
//
// (a coefficient is 1 where its vector's squared norm is under
// sqrt(DBL_MIN), Horovod's floor), so
// that orthogonal gradients add and parallel ones average. Ranks combine by
// recursive vector halving, distance doubling: at level l, rank r and
// r ^ 2^l swap halves of the part they hold, the 2^(l+1) ranks of the pair
// of groups sum their partial dot products and norms, and each combines
// its half. On 4 ranks that is adasum(adasum(g0, g1), adasum(g2, g3)).
//
// Any rank count, beyond Horovod's powers of two: with p ranks and q the
// largest power of two not above p, rank q + i first folds into rank i
// (adasum(g_i, g_{q+i})), the q ranks combine as above, and every rank
// receives the result. On 3 ranks: adasum(adasum(g0, g2), g1).
//
// A fused buffer combines tensor by tensor: each tensor has its own dot
// product and norms, as if it were reduced alone.
//
// The algorithm runs on any Backend through Alltoallv (the pairwise
// swaps), Allreduce (the partial sums) and Allgatherv (the result).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "runtime/backend.h"
#include "runtime/dtype.h"

namespace hvd::runtime {

// The coefficients of a and of b in adasum(a, b).
struct AdasumWeights {
  double a = 1.0, b = 1.0;
};
AdasumWeights AdasumCoefficients(double dot, double anormsq, double bnormsq);

// Whether Adasum takes `type`: the floating-point types.
bool AdasumTakes(DataType type);

class Adasum {
 public:
  Adasum(int rank, int size) : rank_(rank), size_(size) {}

  // In place on every rank: `data` holds tensors of `counts` elements each,
  // one after another, of `type` (AdasumTakes). Collective.
  Status Allreduce(Backend& backend, void* data, DataType type,
                   const std::vector<size_t>& counts);

  // The element range [begin, end) rank `rank` holds after the halving,
  // of a buffer of `n` elements (empty for a folded rank).
  struct Range {
    size_t begin = 0, end = 0;
  };
  Range Final(int rank, size_t n) const;

 private:
  Status Fold(Backend& backend, uint8_t* data, DataType type,
              const std::vector<size_t>& counts, size_t n);
  Status Level(Backend& backend, int level, uint8_t* data, DataType type,
               const std::vector<size_t>& counts, Range* mine);
  Status Gather(Backend& backend, uint8_t* data, DataType type, size_t n);
  uint8_t* Scratch(size_t bytes);

  const int rank_, size_;
  std::vector<uint8_t> scratch_;
  std::vector<double> sums_;
};

}  // namespace hvd::runtime
