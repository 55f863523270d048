// A lock for critical sections of a few dozen instructions on a hot path
// (the flight recorder's, taken once per collective): one locked
// instruction to take it and a plain store to give it back, where
// std::mutex takes two and calls into libc for each. A waiter spins a
// little, then yields: the holder may have been preempted (a host with
// more ranks than CPUs), or be in one of the rare long sections (a dump).
#pragma once

#include <atomic>
#include <thread>

namespace hvd {

class SpinLock {
 public:
  void lock() {
    while (held_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; held_.load(std::memory_order_relaxed); ++spins) {
        if (spins < kSpins) {
#if defined(__x86_64__)
          __builtin_ia32_pause();
#endif
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  bool try_lock() {
    return !held_.load(std::memory_order_relaxed) &&
           !held_.exchange(true, std::memory_order_acquire);
  }
  void unlock() { held_.store(false, std::memory_order_release); }

 private:
  static constexpr int kSpins = 64;
  std::atomic<bool> held_{false};
};

}  // namespace hvd
