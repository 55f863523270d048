// The thread that completes the table's timed-out waits and expired jobs.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include "rendezvous/job_table.h"

namespace hvd::rendezvous {

// Sleeps until the table's earliest deadline and expires it; woken early
// when a new wait may have an earlier deadline.
class Expirer {
 public:
  explicit Expirer(JobTable* table)
      : table_(table), thread_([this] { Run(); }) {}
  ~Expirer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void Kick() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      kicked_ = true;
    }
    cv_.notify_one();
  }

 private:
  void Run() {
    for (;;) {
      std::optional<Clock::time_point> next = table_->Expire(Clock::now());
      std::unique_lock<std::mutex> lock(mu_);
      auto woken = [this] { return stop_ || kicked_; };
      if (next) {
        cv_.wait_until(lock, *next, woken);
      } else {
        cv_.wait(lock, woken);
      }
      if (stop_) return;
      kicked_ = false;
    }
  }

  JobTable* table_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;    // guarded by mu_
  bool kicked_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace hvd::rendezvous
