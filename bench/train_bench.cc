// train_bench: training throughput of train_mnist's model and step (forward,
// backward, gradient averaging through libhvd, Adadelta) at batch 128 on the
// bundled digits. Alone it is one worker; under horovodrun each rank
// reports its own rate. Prints "RESULT train <rank> <images per second>";
// --profile adds where each step's time went ("PROFILE" lines: the spread
// of forward + backward over the steps, and the mean of each phase, where
// "wait" is the end of the pass waiting on the other ranks' gradients).
//   train_bench [--threads N] [--steps N] [--profile]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "hvd/hvd.h"
#include "mnist/adadelta.h"
#include "mnist/idx.h"
#include "mnist/model.h"

int main(int argc, char** argv) {
  int threads = 1, steps = 40;
  bool profile = false;
  for (int i = 1; i < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--profile") {
      profile = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "train_bench: %s needs a value\n", a.c_str());
      return 2;
    }
    if (a == "--threads")
      threads = std::stoi(argv[i + 1]);
    else if (a == "--steps")
      steps = std::stoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "train_bench: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  if (threads < 1 || steps < 1) {
    std::fprintf(stderr, "train_bench: --threads and --steps must be >= 1\n");
    return 2;
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
  using Clock = std::chrono::steady_clock;
  double t_fwd = 0, t_bwd = 0, t_wait = 0, t_opt = 0;
  auto since = [](Clock::time_point& t) {
    auto now = Clock::now();
    double d = std::chrono::duration<double, std::milli>(now - t).count();
    t = now;
    return d;
  };
  auto step = [&](int s) -> hvd::Status {
    auto t = Clock::now();
    int first = (s * kBatch) % (data->count - kBatch);
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = data->pixels[static_cast<size_t>(first) * 784 + i] / 255.0f;
    }
    auto r = model.Forward(x.data(), data->labels.data() + first, kBatch, true);
    if (!r.ok()) return r.status();
    t_fwd += since(t);
    hvd::Status added;
    HVD_RETURN_IF_ERROR(model.Backward([&](int k) {
      auto& p = model.params()[k];
      added.Update(grads.add(p.name, p.grad.data(), p.grad.size()));
    }));
    HVD_RETURN_IF_ERROR(added);
    t_bwd += since(t);
    HVD_ASSIGN_OR_RETURN(bool stepped, grads.end_pass());
    t_wait += since(t);
    if (stepped) opt.Apply(model.params(), 1.0f);
    t_opt += since(t);
    return hvd::Status::Ok();
  };
  for (int s = 0; s < 3; ++s) {  // warm-up: primitives, caches
    if (hvd::Status st = step(s); !st.ok()) {
      std::fprintf(stderr, "train_bench: %s\n", st.ToString().c_str());
      return 1;
    }
  }
  t_fwd = t_bwd = t_wait = t_opt = 0;
  auto start = std::chrono::steady_clock::now();
  std::vector<double> compute_ms;  // forward + backward of each step
  for (int s = 0; s < steps; ++s) {
    const double before = t_fwd + t_bwd;
    hvd::Status st = step(s);
    compute_ms.push_back(t_fwd + t_bwd - before);
    if (!st.ok()) {
      std::fprintf(stderr, "train_bench: %s\n", st.ToString().c_str());
      return 1;
    }
  }
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("RESULT train %d %.1f\n", hvd::rank(), steps * kBatch / secs);
  if (profile) {
    std::sort(compute_ms.begin(), compute_ms.end());
    double mean = 0, var = 0;
    for (double v : compute_ms) mean += v / steps;
    for (double v : compute_ms) var += (v - mean) * (v - mean) / steps;
    std::printf(
        "PROFILE %d compute per step: sd %.2f, p10 %.2f, p50 %.2f, p90 %.2f "
        "ms\n",
        hvd::rank(), std::sqrt(var), compute_ms[steps / 10],
        compute_ms[steps / 2], compute_ms[steps * 9 / 10]);
    std::printf(
        "PROFILE %d forward %.2f backward %.2f wait %.2f optimizer %.2f "
        "ms/step\n",
        hvd::rank(), t_fwd / steps, t_bwd / steps, t_wait / steps,
        t_opt / steps);
  }
  std::fflush(stdout);
  return hvd::shutdown().ok() ? 0 : 1;
}
