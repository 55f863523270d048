// hvd-rendezvousd's etcd store (--store etcd://...): the job table's
// records (table_record.h) kept in an etcd v3 cluster, so that the jobs
// outlive any one daemon and any one etcd member.
//
// One daemon at a time serves a prefix's jobs: it holds PREFIX/owner, a key
// bound to its etcd lease, which it renews; others started on the same
// prefix wait as standbys (watching that key) and take over, reading the
// records back, when the owner stops (its lease is revoked at once) or dies
// (its lease runs out). Every batch of records the owner writes is a
// transaction that holds only while it still owns the key, so a daemon
// that lost its lease (paused, cut off) can never write after its
// successor has begun.
//
//   PREFIX/owner                 the serving daemon's name, on its lease
//   PREFIX/log/SEQ               a batch of records, in order of SEQ
//   PREFIX/snapshot              "GEN CHUNKS": the snapshot in use
//   PREFIX/snap/GEN/I            its records; every log key from GEN on
//                                follows it
//
// Records are batched: a call's change is in the table at once, and its
// answer waits (WhenDurable) until etcd has the batch that holds it, so
// the calls that arrive while one batch is in flight share the next one.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "rendezvous/store/disk_journal.h"
#include "rendezvous/store/etcd_client.h"

namespace hvd::rendezvous::store {

struct EtcdJournalOptions {
  std::string prefix = "/hvd-rendezvous/";
  // Names this daemon in PREFIX/owner, for the standbys' log lines.
  std::string name;
  // The owner key's lease: how long a dead owner keeps its standbys
  // waiting. etcd raises a TTL below its own minimum.
  int lease_seconds = 3;
  // How long a batch may go unwritten (etcd unreachable, no leader)
  // before the daemon gives the jobs up.
  std::chrono::milliseconds commit_timeout{30000};
  // A log of this many bytes, and twice the last snapshot's, is replaced
  // by a snapshot.
  size_t compact_bytes = size_t{8} << 20;
  // Damaged records: moved under PREFIX/damaged-TIME/ and the daemon starts
  // empty, instead of refusing to start.
  bool discard_damaged = false;
};

// What the daemon hears from its etcd store.
struct EtcdJournalHooks {
  // Once, when another daemon serves the prefix: what to log.
  std::function<void(const std::string&)> waiting;
  // Asked about once a second while standing by: true gives up (Cancelled).
  std::function<bool()> stop_waiting;
  // Whether the daemon named by an owner key's value is known to be gone
  // (it ran on this host and its process is no more): then its key is
  // taken over at once instead of when its lease runs out.
  std::function<bool(const std::string& owner)> owner_gone;
  // Once, from any thread, when the daemon can no longer write (another
  // took over, etcd stayed unreachable): its table is then ahead of etcd's
  // and the daemon must stop.
  std::function<void(const Status&)> lost;
};

class EtcdJournal final : public TableJournal {
 public:
  // Takes ownership of the prefix, standing by while another daemon holds
  // it, and reads the records back into `recovered`.
  static StatusOr<std::unique_ptr<EtcdJournal>> Open(
      std::unique_ptr<EtcdClient> client, const EtcdJournalOptions& options,
      EtcdJournalHooks hooks, Recovered* recovered);
  // Writes what is pending and gives the prefix up (revokes the lease), so
  // that a standby takes over at once.
  ~EtcdJournal() override;

  Status Append(const TableRecord& record) override;
  void WhenDurable(std::function<void(const Status&)> then) override;
  void Abandon(const Status& why) override;
  bool WantsSnapshot() const override;
  Status Compact(const std::vector<TableRecord>& snapshot) override;

  // Batches written, and records in them (for tests and the bench).
  uint64_t batches() const;

 private:
  EtcdJournal(std::unique_ptr<EtcdClient> client, EtcdJournalOptions options,
              EtcdJournalHooks hooks);
  Status Acquire();
  Status Load(Recovered* recovered);
  Status SetAside(const std::string& to);
  Status CommitBatch(uint64_t seq, const std::string& value);
  Status Fenced(const std::vector<EtcdOp>& ops, const std::string& what);
  void CommitLoop();
  void KeepAliveLoop();
  void Lose(const Status& why);
  std::string Key(const std::string& suffix) const;
  std::string LogKey(uint64_t seq) const;

  struct Waiter {
    uint64_t mark;  // durable once this many records are
    std::function<void(const Status&)> then;
  };

  const std::unique_ptr<EtcdClient> client_;
  const EtcdJournalOptions o_;
  const EtcdJournalHooks hooks_;
  int64_t lease_ = 0;
  int64_t owner_revision_ = 0;  // PREFIX/owner's, while this daemon owns it

  mutable std::mutex mu_;
  std::condition_variable changed_;  // pending, durable or lost changed
  // Stopping or lost: the keep-alive's own, so that appends (which wake
  // the committer) do not wake it too.
  std::condition_variable ending_;
  std::deque<std::string> pending_;  // encoded records, not yet written
  uint64_t appended_ = 0;            // records appended, in all
  uint64_t durable_ = 0;             // records etcd holds
  uint64_t next_seq_ = 1;            // the next log key's
  uint64_t batches_ = 0;
  size_t log_bytes_ = 0;         // in log keys since the last snapshot
  size_t snapshot_bytes_ = 0;    // of the last snapshot
  uint64_t snapshot_gen_ = 0;    // its GEN, 0 for none
  std::vector<Waiter> waiters_;  // in order of mark
  Status lost_;                  // once not ok, for good
  bool stopping_ = false;
  bool abandoned_ = false;  // Abandon: a batch that fails is not retried
  std::thread committer_, keeper_;
};

}  // namespace hvd::rendezvous::store
