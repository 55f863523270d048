#include "common/tsc_clock.h"

#include <algorithm>
#include <fstream>
#include <string>

namespace hvd {
namespace {

// Whether the kernel keeps time by the counter (read once).
bool KernelClockIsTsc() {
#if defined(__x86_64__)
  static const bool tsc = [] {
    std::ifstream in(
        "/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string source;
    return static_cast<bool>(in >> source) && source == "tsc";
  }();
  return tsc;
#else
  return false;
#endif
}

// A pair of readings (the counter, steady_clock) further apart than this
// on the counter (the thread was preempted between them) is not used to
// measure the rate: a few microseconds at any rate counters run at.
constexpr uint64_t kPairTicks = 20000;

}  // namespace

TscClock::TscClock(bool use_counter, double rate_skew)
    : counter_(use_counter && KernelClockIsTsc()), rate_skew_(rate_skew) {
  // The first pair now: a clock made well before its first read (a
  // control plane, at start-up) has its rate by then.
  if (counter_) (void)Steer();
}

TscClock::Clock::time_point TscClock::Steer() {
#if defined(__x86_64__)
  const uint64_t ticks = __rdtsc();
  const Clock::time_point steady = Clock::now();
  const bool paired = __rdtsc() - ticks < kPairTicks;
  if (!started_) {
    if (paired) {
      started_ = true;
      first_ = steady;
      first_ticks_ = ticks;
    }
    return steady;
  }
  const bool measuring = window_ticks_ == 0;
  // A counter a few ticks behind the last window's start (another CPU's):
  // no time has passed.
  if (!measuring && ticks < anchor_ticks_) return anchor_;
  const Clock::time_point own =
      measuring
          ? steady
          : anchor_ +
                Clock::duration(static_cast<Clock::rep>(
                    static_cast<double>(ticks - anchor_ticks_) * ns_per_tick_));
  if (!paired || ticks <= first_ticks_ ||
      (measuring && steady - first_ < kWindow)) {
    return own;  // steered at the next read
  }
  const double rate = (1 + rate_skew_) *
                      static_cast<double>((steady - first_).count()) /
                      static_cast<double>(ticks - first_ticks_);
  // Never back: the window starts at the later of the two, and runs slow
  // by this clock's lead (at most half) to meet steady_clock at its end.
  const Clock::time_point start = std::max(steady, own);
  const double window = static_cast<double>(kWindow.count());
  const double lead =
      std::min(static_cast<double>((start - steady).count()), window / 2);
  ns_per_tick_ = rate * (1.0 - lead / window);
  window_ticks_ = static_cast<uint64_t>(window / rate);
  anchor_ = start;
  anchor_ticks_ = ticks;
  return start;
#else
  return Clock::now();
#endif
}

}  // namespace hvd
