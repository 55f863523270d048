// The timeline: a Chrome trace (chrome://tracing, Perfetto) of every
// tensor's phases, written by rank 0 when HOROVOD_TIMELINE names a file,
// or between hvd::start_timeline() and hvd::stop_timeline() (with
// HOROVOD_TIMELINE=DYNAMIC, or none, nothing is written until then).
//
// Each tensor is a "process" of the trace, named after it. Phases:
// NEGOTIATE_<OP> (with an instant mark per rank that became ready), then
// <OP> with nested activities (MEMCPY_IN_FUSION_BUFFER, GLOO_<OP>,
// MEMCPY_OUT_FUSION_BUFFER); CYCLE_START instants with mark_cycles.
//
// Off the hot path: callers only format and queue an event; a writer
// thread appends them. The file is valid JSON at every moment: it always
// ends with "]", and each batch overwrites that bracket with ",events]".
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"

namespace hvd::runtime {

class Timeline {
 public:
  Timeline() = default;
  ~Timeline();  // flushes and closes

  // Starts writing `path` (FailedPrecondition while a file is open); Close
  // flushes and closes it (nothing when none is open). Any thread, at any
  // time: events of tensors already under way may lack their start.
  Status Open(const std::string& path, bool mark_cycles);
  void Close();
  bool enabled() const { return open_.load(std::memory_order_acquire); }
  bool mark_cycles() const { return mark_cycles_; }

  void NegotiateStart(const std::string& tensor, const std::string& op);
  void NegotiateRankReady(const std::string& tensor, int rank);
  void NegotiateEnd(const std::string& tensor);
  void Start(const std::string& tensor, const std::string& op);
  void ActivityStart(const std::string& tensor, const std::string& activity);
  void ActivityEnd(const std::string& tensor);
  void End(const std::string& tensor);
  void MarkCycle();

  // Waits until everything queued so far is in the file.
  void Flush();

 private:
  void Emit(const std::string& tensor, const std::string& name, char phase,
            const std::string& extra = "");
  int64_t Now() const;
  void Writer();

  std::mutex control_mu_;  // serialises Open and Close
  std::atomic<bool> open_{false};
  std::string path_;  // guarded by control_mu_
  int fd_ = -1;       // set before the writer starts, cleared after it ends
  bool mark_cycles_ = false;
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_, flushed_;
  std::map<std::string, int> pids_;    // guarded by mu_
  std::vector<std::string> queue_;     // guarded by mu_
  uint64_t queued_ = 0, written_ = 0;  // guarded by mu_
  bool stop_ = false;                  // guarded by mu_
  bool first_ = true;                  // writer thread only
  std::thread writer_;
};

}  // namespace hvd::runtime
