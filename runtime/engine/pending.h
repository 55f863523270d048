// A request the engine holds until it completes, and its completion.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/status.h"
#include "hvd/hvd.h"
#include "runtime/engine/request.h"

namespace hvd::runtime {

// The completion of one request.
class Completion {
 public:
  bool done() const;
  Status Wait();
  // `value`: what the operation returns (join: the last rank to join).
  void Set(Status s, int64_t value = 0);
  // Completes with `s` before the request ever reached the engine (its
  // arguments were refused at submission).
  void Refuse(Status s);
  bool refused() const;
  int64_t value() const;
  // The caller has its result: Wait returned, or a poll found it done.
  // Until then (or until the last handle to it is gone) its name stays
  // taken on this rank (Engine::Enqueue refuses it).
  void Collect() { collected_.store(true, std::memory_order_release); }
  bool collected() const { return collected_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> collected_{false};
  // Set last, with release: a reader that sees it true reads the result
  // without a lock (a step waits on each of its tensors, most of them done
  // by then).
  std::atomic<bool> done_{false};
  // A thread sleeps in Wait: only then does Set take mu_ to wake it (a
  // step's completions otherwise cost a lock and a notify each). Set
  // stores done_, then reads this; Wait stores this, then reads done_,
  // both sequentially consistent: one of them sees the other.
  std::atomic<bool> sleeper_{false};
  // Set once, by the one thread that completes the request: the engine's
  // cycle runner, or the submitter that refuses it before the engine holds
  // it (Refuse).
  bool refused_ = false;
  Status status_;
  int64_t value_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
};

// One request of this rank between its submission and its completion,
// in the engine's table of names (Engine::names_), which keeps the entry
// after it completes, for the name's next submission.
struct Pending {
  // Submitted and not yet completed.
  bool live = false;
  // The name's latest completion: the name stays taken until its result
  // is collected (or every handle to it is gone).
  std::weak_ptr<Completion> held;
  Request request;
  void* data = nullptr;
  Output* out = nullptr;
  std::shared_ptr<Completion> done;
  uint64_t flight = 0;  // its flight recorder entry (0: none)
  // Its response cache id, as an express group found it, valid while the
  // cache's generation is `cache_generation` (Finish then needs no
  // lookup); UINT32_MAX when not known.
  uint32_t cache_id = UINT32_MAX;
  uint64_t cache_generation = 0;
  // The id the name's request was found at when last looked up, and the
  // cache's generation then: kept across the name's submissions, so a
  // loop's same tensor is found again without the lookup's hash.
  uint32_t last_id = UINT32_MAX;
  uint64_t last_generation = 0;
  // A joined rank's stand-in for a tensor it never submitted: zeros it
  // owns, and nobody waits on `done`.
  bool placeholder = false;
  std::vector<uint8_t> own;
  std::vector<int64_t> counts;  // allgather: every rank's, once negotiated
  std::vector<std::vector<int64_t>> all_splits;  // alltoall: every rank's
};

}  // namespace hvd::runtime
