// Every rank allreduces rank + 1; each prints the sum it got.
#include <cstdio>
#include <vector>

#include "hvd/hvd.h"

int main() {
  if (hvd::Status s = hvd::init(); !s.ok()) {
    std::fprintf(stderr, "consumer: %s\n", s.ToString().c_str());
    return 1;
  }
  std::vector<float> v(1000, static_cast<float>(hvd::rank() + 1));
  if (hvd::Status s = hvd::allreduce(v.data(), v.size(), hvd::ReduceOp::kSum);
      !s.ok()) {
    std::fprintf(stderr, "consumer: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("consumer rank %d of %d: sum %g\n", hvd::rank(), hvd::size(),
              v[0]);
  return hvd::shutdown().ok() ? 0 : 1;
}
