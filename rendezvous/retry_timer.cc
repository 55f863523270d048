#include "rendezvous/retry_timer.h"

#include <utility>
#include <vector>

namespace hvd::rendezvous {

void RetryTimer::After(std::chrono::milliseconds delay, Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      tasks_.emplace(Clock::now() + delay, std::move(task));
      if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
      changed_.notify_one();
      return;
    }
  }
  task(false);
}

void RetryTimer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (tasks_.empty()) {
      changed_.wait(lock);
      continue;
    }
    auto first = tasks_.begin();
    if (first->first > Clock::now()) {
      changed_.wait_until(lock, first->first);
      continue;
    }
    Task task = std::move(first->second);
    tasks_.erase(first);
    lock.unlock();
    task(true);  // may post again: After takes the lock itself
    lock.lock();
  }
}

void RetryTimer::Stop() {
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    thread = std::move(thread_);
  }
  changed_.notify_all();
  if (thread.joinable()) thread.join();
  std::multimap<Clock::time_point, Task> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(tasks_);
  }
  for (auto& [when, task] : left) task(false);
}

}  // namespace hvd::rendezvous
