// steady_clock time from the CPU's time-stamp counter, for a wait that
// stamps every turn of its spin (the shared-memory control plane). Reading
// the counter costs about 10 ns on the machines measured, against 24 ns
// for steady_clock through the vDSO, and the exchange of a 4-byte
// allreduce reads the clock two or three times: the 4-byte allreduce went
// from 0.210 to 0.190 us with it.
//
// The counter is used only where the kernel keeps its own time by it
// (clocksource "tsc"): it is then invariant and in step across CPUs.
// Elsewhere, or off x86, Now() is steady_clock::now().
//
// The counter's rate is measured against steady_clock, and the clock is
// steered to it once a millisecond of reads: each window starts at the
// later of steady_clock and this clock's own reading (so it never goes
// back), and runs slower by whatever it led steady_clock by, so that it
// meets steady_clock again by the window's end (as NTP slews). Until a
// millisecond has passed since the clock was made, Now() is steady_clock's
// reading (a 4-byte allreduce measured in that time was 20 % slower).
//
// Not thread-safe: one thread at a time reads an instance.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace hvd {

class TscClock {
 public:
  using Clock = std::chrono::steady_clock;
  // The window between two steerings.
  static constexpr std::chrono::nanoseconds kWindow{1000000};

  // `use_counter` false: always steady_clock (and where the counter may
  // not be used, whatever is asked). `rate_skew`, for tests: the rate is
  // taken as mismeasured by that fraction (the steering must make up).
  explicit TscClock(bool use_counter = true, double rate_skew = 0);

  Clock::time_point Now() {
#if defined(__x86_64__)
    if (counter_) {
      const uint64_t ticks = __rdtsc() - anchor_ticks_;
      if (ticks < window_ticks_) {
        return anchor_ + Clock::duration(static_cast<Clock::rep>(
                             static_cast<double>(ticks) * ns_per_tick_));
      }
      return Steer();
    }
#endif
    return Clock::now();
  }

  // Whether Now() reads the counter (after its first millisecond).
  bool uses_counter() const { return counter_; }

 private:
  // The window's end (or the clock's first millisecond): a new window
  // from steady_clock's reading.
  Clock::time_point Steer();

  const bool counter_;
  const double rate_skew_;
  // The first reading of both clocks: the counter's rate is measured from
  // it (the longer the span, the finer).
  bool started_ = false;
  Clock::time_point first_{};
  uint64_t first_ticks_ = 0;
  // The window: it began at `anchor_`, `anchor_ticks_` on the counter, and
  // lasts `window_ticks_` (0 while the rate is not yet known: every read
  // steers), a tick worth `ns_per_tick_` in it.
  Clock::time_point anchor_{};
  uint64_t anchor_ticks_ = 0;
  uint64_t window_ticks_ = 0;
  double ns_per_tick_ = 0;
};

}  // namespace hvd
