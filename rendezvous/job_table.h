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
//
// Durability: with a journal (SetJournal), every change to the state a
// restart must keep is written as a TableRecord before it is made, and
// Restore rebuilds that state from the records (table_record.h).
#pragma once

#include <atomic>
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
#include "rendezvous/members.h"
#include "rendezvous/table_record.h"

namespace hvd::rendezvous {

using Clock = std::chrono::steady_clock;

struct CreatedJob {
  std::string job_id;
  std::string token;    // handed to the creator once; the table keeps a copy
  int ttl_seconds = 0;  // keep-alive deadline; 0 when jobs never expire
};

// Limits of a table; each names the flag of hvd-rendezvousd that raises it,
// and every refusal is ResourceExhausted naming that flag.
struct TableLimits {
  size_t max_jobs = 1000;             // --max-jobs
  size_t max_keys_per_job = 1000000;  // --max-keys-per-job
  size_t max_value_bytes = 4u << 20;  // --max-value-bytes
  size_t max_job_bytes = 256u << 20;  // --max-job-bytes (keys + values)
  // A job whose creator sends no keep-alive for this long ends (Aborted for
  // its waits). 0: jobs live until ended (the launcher's embedded server).
  int job_ttl_seconds = 0;  // --job-ttl-seconds
};

struct JobInfo {
  int size = 0;
  std::vector<int> joined;  // ranks that have joined, ascending
};

// A job as the daemon's page of its jobs shows it (JobTable::Summaries).
struct JobSummary {
  std::string id;
  bool elastic = false;
  int size = 0;
  int epoch = 0;  // elastic: the membership's number
  std::vector<Member> members;
  size_t keys = 0, bytes = 0;
  double expires_in_s = -1;  // without a keep-alive; -1: never
};

class JobTable {
 public:
  using WaitCallback =
      std::function<void(StatusOr<std::vector<std::string>> values)>;
  using BarrierCallback = std::function<void(Status status)>;
  using JoinCallback = std::function<void(StatusOr<Assignment> assignment)>;
  using WaitId = uint64_t;

  // `now` is the table's clock for keep-alives (tests pass a fake).
  explicit JobTable(TableLimits limits = {},
                    std::function<Clock::time_point()> now = Clock::now)
      : limits_(limits), now_(std::move(now)) {}
  JobTable(const JobTable&) = delete;
  JobTable& operator=(const JobTable&) = delete;

  // Registers a job with a fresh random id and token. Hosts are validated
  // (ValidateHosts); their order fixes the ranks.
  // `elastic`: the job's hosts may change (SetMembership), and a join's
  // generation is the job's membership epoch instead of the slot's count.
  // An elastic job may be created with no hosts and size 0 (epoch 0): joins
  // wait for its first membership.
  // `creation_key` (the creator's random secret, >= 32 characters, or
  // empty): it becomes the token, and a job already made with it is
  // answered instead of a new one (a creator's retry after a lost answer,
  // even across a restart: the token's hash is in the journal).
  StatusOr<CreatedJob> CreateJob(std::vector<HostSlots> hosts, int size,
                                 bool elastic = false,
                                 const std::string& creation_key = "");

  // An elastic job's next membership (epoch + 1): its hosts in assignment
  // order and size, as the launcher decided. Pending barrier rounds end
  // with Aborted (their ranks are gone); joins waiting for a new epoch get
  // their assignment in it, or FailedPrecondition when their host or slot
  // is no longer in the job. FailedPrecondition for a job that is not
  // elastic. Returns the new epoch.
  // `from_epoch` >= 0: the change applies only to that epoch. When the job
  // is one epoch past it with exactly these hosts, the change was already
  // made (a retried call) and its epoch is returned; any other epoch is
  // FailedPrecondition. -1: applies to whatever epoch the job is at.
  StatusOr<int> SetMembership(const std::string& job_id,
                              std::vector<HostSlots> hosts, int size,
                              int from_epoch = -1);

  // Join, waiting when it cannot answer yet: in an elastic job, a process
  // that already joined the current epoch (previous_generation == epoch)
  // waits for the next one; `done` gets DeadlineExceeded at `deadline`.
  // Once every member of the epoch waits so, the next epoch starts with the
  // same hosts (all reset, nobody left: there is no new membership to
  // wait for).
  // Everything else answers at once, as Join. Returns an id for
  // CancelWait; 0 when it completed at once.
  WaitId JoinWait(const std::string& job_id, const std::string& host, int slot,
                  int previous_generation, Clock::time_point deadline,
                  JoinCallback done);

  // NotFound for an unknown job, Unauthenticated for a missing or wrong
  // token (compared in constant time).
  Status Authenticate(const std::string& job_id,
                      const std::string& token) const;

  // The assignment of (host, slot) in a generation. A process passes the
  // generation it last joined (0: none) and gets the next one: the slot's
  // first init() is generation 1, an init() after a shutdown() 2, and so on.
  // Asking again with the same `previous_generation` (a retried request, or
  // a restarted process with 0) answers the slot's current generation, so
  // no generation is skipped. InvalidArgument for a host not in the job,
  // FailedPrecondition for a slot past the host's share of the job or a
  // generation the slot never reached.
  StatusOr<Assignment> Join(const std::string& job_id, const std::string& host,
                            int slot, int previous_generation = 0);

  // Ranks that have joined, ascending.
  StatusOr<std::vector<int>> JoinedRanks(const std::string& job_id) const;
  StatusOr<JobInfo> Info(const std::string& job_id) const;
  // Every job, by id; and the outcome of the last write to the journal
  // (Ok without one, or before any write).
  std::vector<JobSummary> Summaries() const;
  Status LastWrite() const;

  // Pushes the job's expiry TTL seconds past now.
  Status KeepAlive(const std::string& job_id);

  Status Set(const std::string& job_id, const std::string& key,
             std::string value);
  // NotFound naming the key when it was never set. kMembersKey
  // (rendezvous/members.h) is answered from the table: its members now.
  StatusOr<std::string> Get(const std::string& job_id,
                            const std::string& key) const;

  // Every key starting with `prefix`, with its value, by key.
  StatusOr<std::map<std::string, std::string>> GetPrefix(
      const std::string& job_id, const std::string& prefix) const;

  // Calls `done` with the values of `keys` (in order) once all are set, or
  // with DeadlineExceeded naming the missing keys at `deadline` (reported
  // by Expire). Returns an id for CancelWait; 0 when it completed at once.
  WaitId Wait(const std::string& job_id, std::vector<std::string> keys,
              Clock::time_point deadline, WaitCallback done);

  // Enters barrier `name` as `rank`; `done` runs with OK when every rank of
  // the job has entered this round of it, or DeadlineExceeded naming the
  // ranks still missing. The round then resets, so names may be reused.
  // `entry` (0: none) names the call, the same in its retries: one that
  // completed the job's last round is answered OK at once (its answer was
  // lost), not entered in the next. Each round's entries are journaled
  // before it is answered.
  WaitId Barrier(const std::string& job_id, const std::string& name, int rank,
                 Clock::time_point deadline, BarrierCallback done,
                 uint64_t entry = 0);

  // Completes a pending wait or barrier entry with Cancelled (the client
  // went away). Does nothing when it has completed already.
  void CancelWait(WaitId id);

  // Completes every wait whose deadline is at or before `now`, and ends every
  // job whose keep-alive expired. Returns the earliest deadline still
  // pending (wait or job expiry), if any.
  std::optional<Clock::time_point> Expire(Clock::time_point now);

  // Removes the job; its pending waits complete with Aborted(reason).
  Status EndJob(const std::string& job_id, const std::string& reason);

  // Completes every pending wait of every job with `why` (not OK).
  void CancelAll(const Status& why);

  // Where changes are written before they are made (not owned; set
  // before the table is shared, or null for none).
  void SetJournal(TableJournal* journal);
  // Calls `then` once every change made so far is durable in the journal
  // (at once without one); the server answers from it.
  void WhenDurable(std::function<void(const Status&)> then) const;
  // TableJournal::Abandon, at the end of a server's shutdown grace.
  void AbandonDurability(const Status& why) const;
  // Applies a record of a snapshot or journal, in order, to a table that
  // is not serving yet. A restored job's keep-alive deadline counts from
  // now. DataLoss for a record that contradicts the ones before it.
  Status Restore(const TableRecord& record);
  // The records that rebuild the table as it is now (a snapshot).
  std::vector<TableRecord> SnapshotRecords() const;

  size_t JobCount() const;
  // Ranks joined over every job.
  size_t JoinedCount() const;
  // Waits and barriers blocked now, over every job.
  size_t BlockedCount() const;

 private:
  struct Waiter {
    std::string job_id;
    std::vector<std::string> keys;  // for key waits
    size_t missing = 0;             // keys not yet set
    std::string barrier;            // for barrier entries
    uint64_t entry = 0;             // ... the call's (BarrierRequest.entry)
    int rank = -1;
    Clock::time_point deadline;
    WaitCallback on_values;
    BarrierCallback on_barrier;
    JoinCallback on_join;  // a join waiting for the next epoch
    std::string host;
    int slot = -1;
  };
  struct BarrierRound {
    std::set<int> ranks;
    std::vector<WaitId> waiters;
  };
  struct Job {
    std::vector<HostSlots> hosts;
    std::unordered_map<std::string, int> first_rank;  // host -> its rank 0
    std::vector<Assignment> assignments;              // by rank
    std::vector<int> generations;  // by rank: the last one joined (0: none)
    std::set<int> joined;
    std::string token_hash;  // HashToken of the token
    bool elastic = false;
    int epoch = 1;                // elastic: the membership's number
    std::vector<WaitId> joiners;  // elastic: joins waiting for epoch + 1
    std::unordered_map<std::string, std::string> kv;
    std::unordered_map<std::string, std::vector<WaitId>> waiting_on;  // key
    std::unordered_map<std::string, BarrierRound> barriers;
    // The last barrier round completed, of any name, and its entries: a
    // rank whose answer was lost holds up every later round (barriers are
    // the whole job's), so no other can have completed since.
    std::string last_round;
    std::vector<uint64_t> last_entries;
    std::unordered_set<WaitId> waiters;
    size_t bytes = 0;           // keys + values
    Clock::time_point expires;  // when ttl > 0
  };
  using Completion = std::function<void()>;

  // Whether `entry` completed the last round, of barrier `name`; `mu_`
  // held.
  bool PassedLocked(const Job& job, const std::string& name,
                    uint64_t entry) const;
  // Every rank entered barrier `name`: its entries are journaled and its
  // waiters complete (with the journal's error, if any); `mu_` held.
  void CompleteRoundLocked(Job& job, const std::string& job_id,
                           const std::string& name,
                           std::vector<Completion>& completions);
  // The next epoch of an elastic job, with `hosts`; `mu_` held.
  StatusOr<int> NewEpochLocked(Job& job, const std::string& job_id,
                               std::vector<HostSlots> hosts,
                               std::vector<Completion>& completions);
  // Whether every slot of the current membership has a join waiting for
  // the next epoch; `mu_` held.
  bool EveryMemberWaitsLocked(const Job& job) const;
  // The assignment of (host, slot) in the job's current hosts; `mu_` held.
  StatusOr<Assignment> SlotLocked(const Job& job, const std::string& host,
                                  int slot) const;
  // Joins at once, or says (nullopt) that the join must wait for the next
  // epoch; `mu_` held.
  std::optional<StatusOr<Assignment>> JoinLocked(Job& job,
                                                 const std::string& job_id,
                                                 const std::string& host,
                                                 int slot, int previous);
  // Set, with `mu_` held: completions of the waits it satisfies are added
  // to `completions`.
  Status SetLocked(Job& job, const std::string& job_id, const std::string& key,
                   std::string value, std::vector<Completion>& completions);
  // A fixed job's join of `rank`: the slot's next generation; `mu_` held.
  StatusOr<Assignment> JoinFixedLocked(Job& job, const std::string& job_id,
                                       int rank, int previous_generation);
  // The job's members as kMembersKey gives them; `mu_` held.
  static std::string MembersLocked(const Job& job);
  static std::vector<Member> MemberListLocked(const Job& job);
  // Lays out `hosts` as the job's ranks; `mu_` held or the job not shared.
  static void LayOut(Job& job, std::vector<HostSlots> hosts);

  // Writes `record` to the journal, if any, and snapshots the table when
  // the journal asks for it; `mu_` held.
  Status JournalLocked(const TableRecord& record);
  std::vector<TableRecord> SnapshotRecordsLocked() const;

  // Looks up a job; `mu_` must be held.
  StatusOr<Job*> FindLocked(const std::string& job_id);
  StatusOr<const Job*> FindLocked(const std::string& job_id) const;
  WaitId AddWaiterLocked(Job& job, Waiter waiter);
  // Removes a waiter from the table's maps and its job's set (`*job`: null
  // when the job is gone) and returns it; `mu_` held.
  Waiter TakeWaiterLocked(std::unordered_map<WaitId, Waiter>::iterator it,
                          Job** job);
  // Removes a waiting join and returns its callback bound to `a`.
  Completion FinishJoinLocked(WaitId id, StatusOr<Assignment> a);
  // Removes the waiter everywhere and returns its callback bound to
  // `status` (or, for key waits with OK, the values).
  Completion FinishLocked(WaitId id, const Status& status);
  static void RunAll(std::vector<Completion>& completions);

  // Removes a job and returns the completions of its waits; `mu_` held.
  void EndJobLocked(const std::string& job_id, const Status& why,
                    std::vector<Completion>& completions);

  const TableLimits limits_;
  const std::function<Clock::time_point()> now_;
  mutable std::mutex mu_;
  std::set<std::pair<Clock::time_point, std::string>>
      expiries_;                                              // guarded by mu_
  std::unordered_map<std::string, Job> jobs_;                 // guarded by mu_
  std::unordered_map<WaitId, Waiter> waiters_;                // guarded by mu_
  std::set<std::pair<Clock::time_point, WaitId>> deadlines_;  // guarded by mu_
  WaitId next_id_ = 1;                                        // guarded by mu_
  Status last_write_;  // the journal's last Append; guarded by mu_
  // Written under mu_ before the table is shared; read without it by
  // WhenDurable, on every answer.
  std::atomic<TableJournal*> journal_{nullptr};
};

}  // namespace hvd::rendezvous
