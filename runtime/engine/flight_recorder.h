// The flight recorder: this rank's last N collectives (N settable,
// HVD_FLIGHT_RECORDER_ENTRIES), each with its name, op, dtype, bytes,
// device, the engine's process set and sequence number, and when it was
// submitted, negotiated (every rank had named it), started on the backend
// and finished, or that it has not yet. A dump of every rank's recorder
// says where a hung job stands and who is behind (issue: hung or slow
// jobs); it is kept always, so it must cost next to nothing: one
// uncontended lock and no allocation per collective once the ring is
// full (the names' buffers are reused).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/spin_lock.h"
#include "runtime/engine/request.h"

namespace hvd::runtime {

class FlightRecorder {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Phase : uint8_t { kNegotiated, kStarted };

  struct Entry {
    uint64_t seq = 0;  // 1 for the engine's first collective
    std::string name;
    OpType op = OpType::kAllreduce;
    DataType dtype = DataType::kFloat32;
    int64_t bytes = 0;
    int32_t device = -1;
    // Clock::time_point{} where the phase has not been reached.
    Clock::time_point submitted, negotiated, started, finished;
    bool failed = false;
    std::string site;  // where it was submitted ("" for unknown)
  };

  // `capacity` 0: records nothing (every call returns at once).
  FlightRecorder(size_t capacity, int process_set);

  // A collective submitted at `at`: its sequence number (0 when off).
  uint64_t Submitted(const Request& r, Clock::time_point at);
  // One that ran from `start` (submitted and negotiated then) to `end`,
  // recorded once done: Submitted and Ran under one lock.
  uint64_t Completed(const Request& r, Clock::time_point start,
                     Clock::time_point end);
  // Where this thread's next submissions come from (hvd::
  // set_submission_site); kept with each entry this thread submits.
  static void SetThreadSite(const std::string& site);
  // Entry `seq` reached `phase` (a later entry may have taken its place in
  // the ring: then nothing happens).
  void Mark(uint64_t seq, Phase phase, Clock::time_point at);
  void Finished(uint64_t seq, Clock::time_point at, bool ok);
  // The same for each of `items` (`seq_of(item)`: its entry), under one
  // lock: a fused group's tensors pay for one.
  template <typename Items, typename SeqOf>
  void MarkEach(const Items& items, SeqOf seq_of, Phase phase,
                Clock::time_point at);
  template <typename Items, typename SeqOf>
  void FinishedEach(const Items& items, SeqOf seq_of, Clock::time_point at,
                    bool ok);
  // Entry `seq` negotiated and started at `start` and finished at `end`
  // (an express cycle, the fast lane), under one lock.
  void Ran(uint64_t seq, Clock::time_point start, Clock::time_point end);

  // The entries held (the latest `most` of them), oldest first.
  std::vector<Entry> Snapshot(size_t most = SIZE_MAX) const;
  // A dump of them as JSON, for the analyzer: {"rank", "host",
  // "process_set", "dumped_us" (when), "entries": [{"seq", "name", "op",
  // "dtype", "bytes", "device", "submitted_us", "negotiated_us", "started_us",
  // "finished_us" (wall clock, microseconds since the epoch; null where not
  // reached), "failed", "site" (null when unknown)}], and "stacks" (every
  // thread's, runtime/stack_dump.h) when `stacks` is not empty}.
  std::string ToJson(int rank, const std::string& host,
                     const std::string& stacks = "") const;
  // The last `n` entries' submissions, one line each, oldest first: "SEQ
  // SUBMITTED_US NAME" (wall clock; newlines in names as spaces), for the
  // launcher's count of who arrives last (launcher/stragglers.h).
  std::string Arrivals(size_t n) const;

  size_t capacity() const { return ring_.size(); }

 private:
  Entry& SlotLocked(uint64_t seq) { return ring_[seq % ring_.size()]; }
  // Entry `seq`, or null when off or when it left the ring; `mu_` held.
  Entry* FindLocked(uint64_t seq) {
    if (seq == 0) return nullptr;
    Entry& e = SlotLocked(seq);
    return e.seq == seq ? &e : nullptr;
  }
  static void SetLocked(Entry& e, Phase phase, Clock::time_point at) {
    (phase == Phase::kNegotiated ? e.negotiated : e.started) = at;
  }
  // Fills the next slot; `mu_` held.
  Entry& NextLocked(const Request& r, Clock::time_point at);

  const int process_set_;
  mutable SpinLock mu_;      // short sections: a spin lock (common/spin_lock.h)
  std::vector<Entry> ring_;  // guarded by mu_
  uint64_t last_ = 0;        // guarded by mu_: the newest entry's seq
  // The slot of the next entry, (last_ + 1) % ring_.size() (entry `seq`
  // lies at seq % ring_.size()), kept so that recording one (every call
  // on the fast lane) divides nothing.
  size_t next_slot_;  // guarded by mu_
};

template <typename Items, typename SeqOf>
void FlightRecorder::MarkEach(const Items& items, SeqOf seq_of, Phase phase,
                              Clock::time_point at) {
  if (ring_.empty()) return;
  std::lock_guard<SpinLock> lock(mu_);
  for (const auto& item : items) {
    if (Entry* e = FindLocked(seq_of(item))) SetLocked(*e, phase, at);
  }
}

template <typename Items, typename SeqOf>
void FlightRecorder::FinishedEach(const Items& items, SeqOf seq_of,
                                  Clock::time_point at, bool ok) {
  if (ring_.empty()) return;
  std::lock_guard<SpinLock> lock(mu_);
  for (const auto& item : items) {
    if (Entry* e = FindLocked(seq_of(item))) {
      e->finished = at;
      e->failed = !ok;
    }
  }
}

}  // namespace hvd::runtime
