// The smallest hvd program: every rank allreduces rank + 1 and checks the
// sum is size * (size + 1) / 2.
//
//   horovodrun -np 3 hvd_hello
#include <cstdio>

#include "hvd/hvd.h"

int main() {
  hvd::Status s = hvd::init();
  if (!s.ok()) {
    std::fprintf(stderr, "hvd_hello: %s\n", s.ToString().c_str());
    return 1;
  }
  const int rank = hvd::rank();
  const int size = hvd::size();
  double value = rank + 1;
  s = hvd::allreduce(&value, 1, hvd::ReduceOp::kSum);
  if (!s.ok()) {
    std::fprintf(stderr, "hvd_hello: %s\n", s.ToString().c_str());
    return 1;
  }
  const double expected = size * (size + 1) / 2.0;
  std::printf("rank %d/%d: sum=%g\n", rank, size, value);
  std::fflush(stdout);
  s = hvd::shutdown();
  if (value != expected) {
    std::fprintf(stderr, "hvd_hello: rank %d: sum is %g, expected %g\n", rank,
                 value, expected);
    return 1;
  }
  return s.ok() ? 0 : 1;
}
