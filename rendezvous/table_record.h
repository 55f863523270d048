// The job table's durable state as a stream of records: what a store
// keeps so that a restarted rendezvous answers as the old one would have.
// The table writes a record to its journal before the change it describes
// is made or answered, and a table rebuilt from the records of a snapshot
// and of the journal after it holds the same jobs, tokens (hashed),
// members, generations, membership epochs, keys, and which calls
// completed each barrier's last round. Waits, rounds under way and
// keep-alive deadlines are not in it: clients send their waits again
// (RendezvousClient), and a restored job's TTL counts from the restart.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "rendezvous/assignment.h"

namespace hvd::rendezvous {

struct TableRecord {
  enum class Kind {
    kJob = 1,         // job_id, token_hash, elastic, hosts, epoch
    kMembership = 2,  // job_id, hosts, epoch: an elastic job's next one
    kJoined = 3,      // job_id, rank, generation
    kKey = 4,         // job_id, key, value
    kEnd = 5,         // job_id: ended or expired
    kBarrier = 6,     // job_id, key (its name), entries: the last round
  };
  Kind kind = Kind::kJob;
  std::string job_id;
  std::string token_hash;
  bool elastic = false;
  std::vector<HostSlots> hosts;
  int epoch = 0;
  int rank = -1;
  int generation = 0;
  std::string key, value;
  std::vector<uint64_t> entries;

  bool operator==(const TableRecord&) const = default;
};

// The records, one maker per kind.
TableRecord JobRecord(const std::string& job_id, const std::string& token_hash,
                      bool elastic, const std::vector<HostSlots>& hosts,
                      int epoch);
TableRecord MembershipRecord(const std::string& job_id,
                             const std::vector<HostSlots>& hosts, int epoch);
TableRecord JoinedRecord(const std::string& job_id, int rank, int generation);
TableRecord KeyRecord(const std::string& job_id, const std::string& key,
                      const std::string& value);
TableRecord EndRecord(const std::string& job_id);
TableRecord BarrierRecord(const std::string& job_id, const std::string& name,
                          const std::vector<uint64_t>& entries);

// Where the table writes its records. Append is called under the table's
// lock, in the order of the changes; an error refuses the change. A record
// is as durable as the store promises either when Append returns or, for
// a store that writes records in batches, when WhenDurable says so: every
// answer the server gives waits for that.
class TableJournal {
 public:
  virtual ~TableJournal() = default;
  virtual Status Append(const TableRecord& record) = 0;
  // Calls `then` once every record appended so far is durable (at once,
  // here), or with the store's error when it cannot be.
  virtual void WhenDurable(std::function<void(const Status&)> then) {
    then(Status::Ok());
  }
  // The server stops and its grace is over: what still waits in
  // WhenDurable gets `why` now (its change may never be written, so its
  // caller must not be told it was), and writing stops retrying.
  virtual void Abandon(const Status& why) { (void)why; }
  // Whether the journal has grown enough to be replaced by a snapshot of
  // the table (Compact, with the table's SnapshotRecords). The table asks
  // before it appends a record, when every record so far is applied.
  virtual bool WantsSnapshot() const { return false; }
  virtual Status Compact(const std::vector<TableRecord>& snapshot) {
    (void)snapshot;
    return Status::Ok();
  }
};

// Keys the table does not journal: telemetry its writers publish again
// every second (metrics, arrivals), which would otherwise fill the journal.
bool IsEphemeralKey(const std::string& key);

}  // namespace hvd::rendezvous
