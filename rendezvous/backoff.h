// How long a client waits before it retries a call the server could not
// answer (not running, restarting, unreachable): doubling steps from
// `first` up to `most`, each wait drawn at random from the upper half of
// its step ("equal jitter"), so the many clients of a restarted server do
// not all come back in the same millisecond, and none waits less than
// half a step.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>

namespace hvd::rendezvous {

class Backoff {
 public:
  using Ms = std::chrono::milliseconds;

  explicit Backoff(uint64_t seed, Ms first = Ms(20), Ms most = Ms(1000))
      : step_(std::max(first, Ms(1))),
        most_(std::max(most, step_)),
        rng_(seed) {}

  // The next wait: in [step / 2, step], then the step doubles.
  Ms Next() {
    const int64_t half = step_.count() / 2;
    std::uniform_int_distribution<int64_t> draw(half, step_.count());
    const Ms wait(draw(rng_));
    step_ = std::min(step_ * 2, most_);
    return wait;
  }

 private:
  Ms step_;
  const Ms most_;
  std::mt19937_64 rng_;
};

// A seed that differs between the calls of one process and between
// processes, so that retrying clients spread out.
inline uint64_t BackoffSeed() {
  static std::atomic<uint64_t> n{0};
  return std::random_device{}() ^ (++n << 32);
}

}  // namespace hvd::rendezvous
