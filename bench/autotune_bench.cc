// autotune_bench: steps of a gradient mix shaped like the MNIST model's
// (tensors of 1.2 M, 18 K, 1.3 K and 320 floats plus 60 small ones), all
// submitted at once and averaged; every result is checked. Rank 0 prints
// "RESULT autotune <steps per second>" over the last quarter of the steps
// (after any tuning has settled).
//   autotune_bench [--steps N]
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "hvd/hvd.h"

int main(int argc, char** argv) {
  int steps = 400;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--steps") steps = std::stoi(argv[i + 1]);
  }
  if (hvd::Status s = hvd::init(); !s.ok()) {
    std::fprintf(stderr, "autotune_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  std::vector<size_t> sizes = {1179648, 18432, 1280, 320};
  for (int i = 0; i < 60; ++i) sizes.push_back(16 + 7 * i);
  std::vector<std::vector<float>> grads;
  for (size_t n : sizes) grads.emplace_back(n);
  const float want = (hvd::size() + 1) / 2.0f;  // average of rank + 1
  auto start = std::chrono::steady_clock::now();
  auto tail_start = start;
  for (int s = 0; s < steps; ++s) {
    if (s == steps - steps / 4) tail_start = std::chrono::steady_clock::now();
    std::vector<hvd::Handle> handles;
    for (size_t k = 0; k < grads.size(); ++k) {
      std::fill(grads[k].begin(), grads[k].end(), hvd::rank() + 1.0f);
      handles.push_back(hvd::allreduce_async(
          "grad." + std::to_string(k), grads[k].data(),
          static_cast<int64_t>(grads[k].size()), hvd::DataType::kFloat32,
          hvd::ReduceOp::kAverage));
    }
    for (size_t k = 0; k < handles.size(); ++k) {
      hvd::Status st = handles[k].wait();
      if (!st.ok() || grads[k][0] != want || grads[k].back() != want) {
        std::fprintf(stderr, "autotune_bench: step %d tensor %zu: %s\n", s, k,
                     st.ok() ? "wrong result" : st.ToString().c_str());
        return 1;
      }
    }
  }
  double tail = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                              tail_start)
                    .count();
  if (hvd::rank() == 0) {
    std::printf("RESULT autotune %.2f\n", (steps / 4) / tail);
  }
  std::fflush(stdout);
  return hvd::shutdown().ok() ? 0 : 1;
}
