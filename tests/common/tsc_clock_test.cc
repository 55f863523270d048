#include "common/tsc_clock.h"

#include <gtest/gtest.h>

#include <chrono>

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;

// Reads `clock` for `span` of steady_clock time: every reading lies
// between steady_clock's readings around it (give or take `slack`) and
// none goes back. A preempted thread only widens the bracket.
void ExpectFollowsSteadyClock(TscClock& clock, Clock::duration span,
                              Clock::duration slack) {
  const Clock::time_point end = Clock::now() + span;
  Clock::time_point last{};
  long reads = 0;
  for (Clock::time_point before = Clock::now(); before < end; ++reads) {
    const Clock::time_point now = clock.Now();
    const Clock::time_point after = Clock::now();
    ASSERT_GE(now, last) << "read " << reads << " went back";
    ASSERT_GE(now, before - slack)
        << "read " << reads << " behind steady_clock by "
        << std::chrono::duration<double, std::micro>(before - now).count()
        << " us";
    ASSERT_LE(now, after + slack)
        << "read " << reads << " ahead of steady_clock by "
        << std::chrono::duration<double, std::micro>(now - after).count()
        << " us";
    last = now;
    before = after;
  }
}

TEST(TscClockTest, FollowsSteadyClockAndNeverGoesBack) {
  TscClock clock;
  ExpectFollowsSteadyClock(clock, std::chrono::milliseconds(60),
                           microseconds(100));
}

TEST(TscClockTest, SteeringMakesUpForARateMeasuredWrong) {
  // 5 % off: unsteered, 2.5 ms apart from steady_clock after 50 ms; each
  // window's steering keeps it within 5 % of a window.
  for (double skew : {0.05, -0.05}) {
    SCOPED_TRACE(skew);
    TscClock clock(true, skew);
    ExpectFollowsSteadyClock(clock, std::chrono::milliseconds(60),
                             microseconds(100));
  }
}

TEST(TscClockTest, WithoutTheCounterItIsSteadyClock) {
  TscClock clock(false);
  EXPECT_FALSE(clock.uses_counter());
  ExpectFollowsSteadyClock(clock, std::chrono::milliseconds(5),
                           Clock::duration::zero());
}

}  // namespace
}  // namespace hvd
