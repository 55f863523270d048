// train_bench: training throughput of train_mnist's model and step (forward,
// backward, gradient averaging through libhvd, Adadelta) at batch 128 on the
// bundled digits. Alone it is one worker; under horovodrun each rank
// reports its own rate. Prints "RESULT train <rank> <images per second>".
//   train_bench [--threads N] [--steps N]
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "examples/mnist/adadelta.h"
#include "examples/mnist/idx.h"
#include "examples/mnist/model.h"
#include "hvd/hvd.h"

int main(int argc, char** argv) {
  int threads = 1, steps = 40;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--threads")
      threads = std::stoi(argv[i + 1]);
    else if (a == "--steps")
      steps = std::stoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "train_bench: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  omp_set_num_threads(threads);
  if (hvd::Status s = hvd::init(); !s.ok()) {
    std::fprintf(stderr, "train_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  auto data = hvd::mnist::ReadIdxPair(HVD_MNIST_DATA_DIR, "train");
  if (!data.ok()) {
    std::fprintf(stderr, "train_bench: %s\n", data.status().ToString().c_str());
    return 1;
  }
  constexpr int kBatch = 128;
  std::vector<float> x(kBatch * 784);
  hvd::mnist::Model model(1);
  hvd::mnist::Adadelta opt(model.params());
  hvd::DistributedGradients grads;
  auto step = [&](int s) -> hvd::Status {
    int first = (s * kBatch) % (data->count - kBatch);
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = data->pixels[static_cast<size_t>(first) * 784 + i] / 255.0f;
    }
    auto r = model.Forward(x.data(), data->labels.data() + first, kBatch, true);
    if (!r.ok()) return r.status();
    hvd::Status added;
    HVD_RETURN_IF_ERROR(model.Backward([&](int k) {
      auto& p = model.params()[k];
      added.Update(grads.add(p.name, p.grad.data(), p.grad.size()));
    }));
    HVD_RETURN_IF_ERROR(added);
    HVD_ASSIGN_OR_RETURN(bool stepped, grads.end_pass());
    if (stepped) opt.Apply(model.params(), 1.0f);
    return hvd::Status::Ok();
  };
  for (int s = 0; s < 3; ++s) {  // warm-up: primitives, caches
    if (hvd::Status st = step(s); !st.ok()) {
      std::fprintf(stderr, "train_bench: %s\n", st.ToString().c_str());
      return 1;
    }
  }
  auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    if (hvd::Status st = step(s); !st.ok()) {
      std::fprintf(stderr, "train_bench: %s\n", st.ToString().c_str());
      return 1;
    }
  }
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("RESULT train %d %.1f\n", hvd::rank(), steps * kBatch / secs);
  std::fflush(stdout);
  return hvd::shutdown().ok() ? 0 : 1;
}
