// A request's completion: a thread asleep in Wait is woken by Set, a
// refusal says so, and the result is read once done.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "runtime/engine/pending.h"

namespace hvd::runtime {
namespace {

// Set takes no lock unless a waiter sleeps: a waiter that went to sleep
// must still be woken. Many rounds, so some waiters sleep before Set and
// some find it done; a lost wake-up leaves its waiter asleep and fails
// the round after 30 s rather than hanging the suite.
TEST(CompletionTest, SetWakesAWaiterAsleepOrNot) {
  for (int round = 0; round < 2000; ++round) {
    auto done = std::make_shared<Completion>();
    std::promise<void> started;
    auto waiter = std::async(std::launch::async, [&] {
      started.set_value();
      return done->Wait();
    });
    started.get_future().wait();
    if (round % 2) std::this_thread::yield();
    done->Set(Status::Internal("x", "round " + std::to_string(round)), round);
    ASSERT_EQ(waiter.wait_for(std::chrono::seconds(30)),
              std::future_status::ready)
        << "round " << round << ": the waiter was not woken";
    Status s = waiter.get();
    EXPECT_EQ(s.message(), "x: round " + std::to_string(round));
    EXPECT_EQ(done->value(), round);
    EXPECT_TRUE(done->collected());
    EXPECT_FALSE(done->refused());
  }
}

TEST(CompletionTest, ARefusalIsDoneAndSaysSoAndASecondSetChangesNothing) {
  Completion c;
  EXPECT_FALSE(c.done());
  EXPECT_FALSE(c.refused());
  EXPECT_EQ(c.value(), 0);
  c.Refuse(Status::InvalidArgument("tensor 'a'", "is empty"));
  EXPECT_TRUE(c.done());
  EXPECT_TRUE(c.refused());
  c.Set(Status::Ok(), 7);  // the first completion stands
  EXPECT_EQ(c.Wait().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.value(), 0);
  EXPECT_TRUE(c.collected());
}

}  // namespace
}  // namespace hvd::runtime
