#include "common/spin_lock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace hvd {
namespace {

// More threads than this machine has CPUs, each adding to a plain counter
// under the lock: no add is lost (a holder preempted mid-section is waited
// for, the waiters yielding).
TEST(SpinLockTest, KeepsThreadsOutOfEachOthersSections) {
  SpinLock lock;
  uint64_t count = 0;  // guarded by lock
  constexpr int kThreads = 8, kAdds = 200000;
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      // All at once, so that they overlap.
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int i = 0; i < kAdds; ++i) {
        std::lock_guard<SpinLock> hold(lock);
        // A read and a write apart, each made (volatile): an add lost to
        // a second holder shows.
        volatile uint64_t* c = &count;
        const uint64_t seen = *c;
        *c = seen + 1;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(count, uint64_t{kThreads} * kAdds);
}

TEST(SpinLockTest, TryLockFailsWhileHeld) {
  SpinLock lock;
  ASSERT_TRUE(lock.try_lock());
  bool other = true;
  std::thread([&] { other = lock.try_lock(); }).join();
  EXPECT_FALSE(other);
  lock.unlock();
  std::thread([&] {
    other = lock.try_lock();
    if (other) lock.unlock();
  }).join();
  EXPECT_TRUE(other);
}

}  // namespace
}  // namespace hvd
