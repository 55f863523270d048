// JobTable: the rendezvous's state, as a plain class with no gRPC types.
//
// It holds jobs (hosts, size, secret token), the assignment of each joined
// slot, a key/value store per job, and the waits blocked on keys or
// barriers. Time is passed in (deadlines, `now`), so tests drive it without
// sleeping and the service supplies the clock.
//
// Thread-safety: every method may be called from any thread. Completion
// callbacks run exactly once, on the calling thread of the method that
// completes them (Set, Barrier, Expire, CancelWait, EndJob, or the Wait or
// Barrier call itself when it can answer at once) and never under the
// table's lock, so a callback may call back into the table.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "rendezvous/assignment.h"

namespace hvd::rendezvous {

using Clock = std::chrono::steady_clock;

struct CreatedJob {
  std::string job_id;
  std::string token;  // handed to the creator once; the table keeps a copy
};

class JobTable {
 public:
  using WaitCallback =
      std::function<void(StatusOr<std::vector<std::string>> values)>;
  using BarrierCallback = std::function<void(Status status)>;
  using WaitId = uint64_t;

  JobTable() = default;
  JobTable(const JobTable&) = delete;
  JobTable& operator=(const JobTable&) = delete;

  // Registers a job with a fresh random id and token. Hosts are validated
  // (ValidateHosts); their order fixes the ranks.
  StatusOr<CreatedJob> CreateJob(std::vector<HostSlots> hosts, int size);

  // NotFound for an unknown job, Unauthenticated for a missing or wrong
  // token (compared in constant time).
  Status Authenticate(const std::string& job_id,
                      const std::string& token) const;

  // The assignment of (host, slot). Joining the same slot again returns the
  // same assignment. InvalidArgument for a host not in the job or a slot out
  // of range.
  StatusOr<Assignment> Join(const std::string& job_id, const std::string& host,
                            int slot);

  // Ranks that have joined, ascending.
  StatusOr<std::vector<int>> JoinedRanks(const std::string& job_id) const;

  Status Set(const std::string& job_id, const std::string& key,
             std::string value);
  // NotFound naming the key when it was never set.
  StatusOr<std::string> Get(const std::string& job_id,
                            const std::string& key) const;

  // Calls `done` with the values of `keys` (in order) once all are set, or
  // with DeadlineExceeded naming the missing keys at `deadline` (reported
  // by Expire). Returns an id for CancelWait; 0 when it completed at once.
  WaitId Wait(const std::string& job_id, std::vector<std::string> keys,
              Clock::time_point deadline, WaitCallback done);

  // Enters barrier `name` as `rank`; `done` runs with OK when every rank of
  // the job has entered this round of it, or DeadlineExceeded naming the
  // ranks still missing. The round then resets, so names may be reused.
  WaitId Barrier(const std::string& job_id, const std::string& name, int rank,
                 Clock::time_point deadline, BarrierCallback done);

  // Completes a pending wait or barrier entry with Cancelled (the client
  // went away). Does nothing when it has completed already.
  void CancelWait(WaitId id);

  // Completes every wait whose deadline is at or before `now`. Returns the
  // earliest deadline still pending, if any.
  std::optional<Clock::time_point> Expire(Clock::time_point now);

  // Removes the job; its pending waits complete with Aborted(reason).
  Status EndJob(const std::string& job_id, const std::string& reason);

  // Completes every pending wait of every job with Cancelled(reason).
  void CancelAll(const std::string& reason);

  size_t JobCount() const;

 private:
  struct Waiter {
    std::string job_id;
    std::vector<std::string> keys;  // for key waits
    size_t missing = 0;             // keys not yet set
    std::string barrier;            // for barrier entries
    int rank = -1;
    Clock::time_point deadline;
    WaitCallback on_values;
    BarrierCallback on_barrier;
  };
  struct BarrierRound {
    std::set<int> ranks;
    std::vector<WaitId> waiters;
  };
  struct Job {
    std::vector<HostSlots> hosts;
    std::unordered_map<std::string, int> first_rank;  // host -> its rank 0
    std::vector<Assignment> assignments;              // by rank
    std::set<int> joined;
    std::string token;
    std::unordered_map<std::string, std::string> kv;
    std::unordered_map<std::string, std::vector<WaitId>> waiting_on;  // key
    std::unordered_map<std::string, BarrierRound> barriers;
    std::unordered_set<WaitId> waiters;
  };
  using Completion = std::function<void()>;

  // Looks up a job; `mu_` must be held.
  StatusOr<Job*> FindLocked(const std::string& job_id);
  StatusOr<const Job*> FindLocked(const std::string& job_id) const;
  WaitId AddWaiterLocked(Job& job, Waiter waiter);
  // Removes the waiter everywhere and returns its callback bound to
  // `status` (or, for key waits with OK, the values).
  Completion FinishLocked(WaitId id, const Status& status);
  static void RunAll(std::vector<Completion>& completions);

  mutable std::mutex mu_;
  std::unordered_map<std::string, Job> jobs_;                 // guarded by mu_
  std::unordered_map<WaitId, Waiter> waiters_;                // guarded by mu_
  std::set<std::pair<Clock::time_point, WaitId>> deadlines_;  // guarded by mu_
  WaitId next_id_ = 1;                                        // guarded by mu_
};

}  // namespace hvd::rendezvous
