// Runs tasks after a delay, on a thread of its own: the client's retries,
// which must not sleep on gRPC's threads. Private to the client library.
//
// Every task runs exactly once: with `true` when it is due, or with
// `false` when the timer stops first (so each call still gets its one
// answer). After Stop, new tasks run at once with `false`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace hvd::rendezvous {

class RetryTimer {
 public:
  using Task = std::function<void(bool run)>;

  RetryTimer() = default;
  RetryTimer(const RetryTimer&) = delete;
  RetryTimer& operator=(const RetryTimer&) = delete;
  ~RetryTimer() { Stop(); }

  // The thread starts with the first task: most clients never retry.
  void After(std::chrono::milliseconds delay, Task task);
  // Waits for a task that is running, then runs the rest with `false`.
  void Stop();

 private:
  using Clock = std::chrono::steady_clock;
  void Loop();

  std::mutex mu_;
  std::condition_variable changed_;
  std::multimap<Clock::time_point, Task> tasks_;  // guarded by mu_
  bool stopping_ = false;                         // guarded by mu_
  std::thread thread_;                            // started under mu_
};

}  // namespace hvd::rendezvous
