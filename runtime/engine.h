// The engine: one background thread per process that turns named,
// asynchronous requests into few large collectives.
//
// Protocol (every cycle, on every rank, in lockstep):
//   1. Wait up to the cycle time for new requests; a new request ends the
//      wait at once.
//   2. Negotiate: every rank contributes the requests it received since the
//      last cycle (name + metadata, in submission order) and a shutdown bit;
//      one allgatherv gives every rank every rank's list. Horovod sends the
//      lists to rank 0, which answers; an allgather gives every rank the
//      same information in one collective, and every rank then runs the
//      same deterministic decision, so no answer has to travel back.
//   3. Decide: walking the lists in rank order, a tensor is ready when all
//      ranks have named it. Its metadata (op, dtype, element count, reduce
//      op, scale factors, root) must agree across ranks; a mismatch
//      completes it everywhere with an error naming the tensor and ranks.
//   4. Fuse: consecutive ready allreduces with the same dtype, reduce op
//      and scale factors share one buffer up to the fusion threshold and one
//      backend call. Fusion never reorders: every rank fuses the same list.
//   5. Execute on the backend, scale, copy out, complete the handles.
// A backend failure (dead peer, timeout) completes every pending and every
// later request with that error; nothing waits forever. When any rank shuts
// down, the others' pending requests complete with an error saying so.
//
// Thread-safety: Enqueue may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "runtime/backend.h"
#include "runtime/dtype.h"
#include "runtime/engine_request.h"
#include "runtime/response_cache.h"

namespace hvd::runtime {

class Timeline;

struct EngineOptions {
  int rank = 0;
  int size = 1;
  size_t fusion_threshold_bytes = 128u << 20;  // HOROVOD_FUSION_THRESHOLD
  std::chrono::microseconds cycle_time{1000};  // HOROVOD_CYCLE_TIME (ms)
  // Response cache entries (HOROVOD_CACHE_CAPACITY); 0 disables it.
  size_t cache_capacity = 1024;
  // Stall inspector (rank 0): warn about tensors some ranks submitted and
  // others not for longer than the warning time, naming the missing ranks;
  // after the shutdown time (0: never) end the job with an error.
  bool stall_check = true;  // !HOROVOD_STALL_CHECK_DISABLE
  std::chrono::milliseconds stall_warning{60000};  // ..._CHECK_TIME_SECONDS
  std::chrono::milliseconds stall_shutdown{0};     // ..._SHUTDOWN_TIME_SECONDS
  // Where warnings go; default: the log at WARNING.
  std::function<void(const std::string&)> on_stall_warning;
  // Rank 0's timeline, or null. Not owned; outlives the engine.
  Timeline* timeline = nullptr;
};

// The completion of one request.
class Completion {
 public:
  bool done() const;
  Status Wait();
  void Set(Status s);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  Status status_;
};

class Engine {
 public:
  Engine(EngineOptions options, Backend* backend);
  ~Engine();  // shuts down if Shutdown was not called

  // Queues `request` on `data` (in place; count elements of dtype). The
  // buffer must stay valid until the completion is done. An allgather reads
  // `data` and fills `*gathered` with every rank's elements in rank order.
  std::shared_ptr<Completion> Enqueue(Request request, void* data,
                                      std::vector<uint8_t>* gathered = nullptr);

  // Queues several requests at once, so they reach the negotiation in the
  // same cycle on this rank and, when every rank groups them alike, run
  // together (fused when they allow). Results are per request.
  std::vector<std::shared_ptr<Completion>> EnqueueGroup(
      std::vector<std::pair<Request, void*>> requests);

  // Stops after telling the other ranks; pending requests complete with an
  // error. Idempotent.
  void Shutdown();

  // Serialization of negotiation messages (exposed for tests).
  static std::string Encode(uint8_t stop, const std::vector<Request>& reqs);
  static StatusOr<std::vector<Request>> Decode(const std::string& bytes,
                                               uint8_t* stop);

 private:
  struct Pending {
    Request request;
    void* data = nullptr;
    std::vector<uint8_t>* gathered = nullptr;
    std::shared_ptr<Completion> done;
    std::vector<int64_t> counts;  // allgather: every rank's, once negotiated
    std::vector<std::vector<int64_t>> all_splits;  // alltoall: every rank's
  };
  struct Seen {     // what the negotiation knows of one tensor
    Request first;  // metadata of the first rank that named it
    int first_rank = -1;
    std::vector<int> ranks;
    std::vector<int64_t> counts;               // by rank (allgather)
    std::vector<std::vector<int64_t>> splits;  // by rank (alltoall)
    std::string mismatch;  // set when a rank's metadata differs
    std::chrono::steady_clock::time_point since;  // first named
  };
  // Stop reasons carried by the negotiation's shutdown byte.
  enum StopReason : uint8_t { kRunning = 0, kShutdown = 1, kStalled = 2 };

  // Why `request` cannot be queued (OK when it can); `mu_` not held.
  Status Validate(const Request& request, void* data,
                  std::vector<uint8_t>* gathered) const;
  // Queues or refuses under `mu_`.
  void AddLocked(Request request, void* data, std::vector<uint8_t>* gathered,
                 const std::shared_ptr<Completion>& done, Status& refuse);
  void Loop();
  Status RunCycle(uint8_t stop, uint8_t* everyone_stop);
  // Rank 0: warns about stalled tensors; returns true when the stall has
  // lasted past the shutdown time.
  bool InspectStalls();
  // Timeline events of one executed group, around `run`.
  template <typename F>
  Status Traced(const std::vector<Pending*>& group, bool fused, F&& run);
  // The tensors pending past the warning time, with their missing ranks.
  std::string StallReport(std::chrono::steady_clock::time_point now,
                          bool* past_shutdown) const;
  Status Execute(const std::vector<std::string>& ready);
  Status ExecuteFused(const std::vector<Pending*>& group);
  void FailAll(const Status& s);
  // Adds a completed request to the cache; requeues a pending request of
  // this rank whose entry it evicted.
  void Remember(const Request& r);

  const EngineOptions options_;
  Backend* backend_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Request> fresh_;              // guarded by mu_: not yet sent
  std::map<std::string, Pending> pending_;  // guarded by mu_
  bool stop_ = false;                       // guarded by mu_
  Status failed_;                           // guarded by mu_
  // Only the engine thread touches these:
  std::map<std::string, Seen> seen_;
  std::vector<uint8_t> fusion_;
  ResponseCache cache_;
  std::set<uint32_t> my_cached_;  // cache ids this rank has pending
  std::map<uint32_t, std::chrono::steady_clock::time_point> cached_since_;
  std::map<uint32_t, std::vector<bool>> cached_ranks_;  // who has the bit
  std::chrono::steady_clock::time_point last_stall_check_ =
      std::chrono::steady_clock::now();
  std::thread thread_;
};

}  // namespace hvd::runtime
