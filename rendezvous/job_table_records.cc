// The job table's durability: its changes as records for a journal, and
// the table rebuilt from them (table_record.h).
#include <string>

#include "rendezvous/flight_keys.h"
#include "rendezvous/job_table.h"

namespace hvd::rendezvous {
namespace {

Status Contradicts(const TableRecord& r, const std::string& why) {
  return Status::DataLoss("state record for job '" + r.job_id + "'", why);
}

// A record of `kind` for `job_id`; its maker fills in the rest.
TableRecord RecordOf(TableRecord::Kind kind, const std::string& job_id) {
  TableRecord r;
  r.kind = kind;
  r.job_id = job_id;
  return r;
}

}  // namespace

TableRecord JobRecord(const std::string& job_id, const std::string& token_hash,
                      bool elastic, const std::vector<HostSlots>& hosts,
                      int epoch) {
  TableRecord r = RecordOf(TableRecord::Kind::kJob, job_id);
  r.token_hash = token_hash;
  r.elastic = elastic;
  r.hosts = hosts;
  r.epoch = epoch;
  return r;
}

TableRecord MembershipRecord(const std::string& job_id,
                             const std::vector<HostSlots>& hosts, int epoch) {
  TableRecord r = RecordOf(TableRecord::Kind::kMembership, job_id);
  r.hosts = hosts;
  r.epoch = epoch;
  return r;
}

TableRecord JoinedRecord(const std::string& job_id, int rank, int generation) {
  TableRecord r = RecordOf(TableRecord::Kind::kJoined, job_id);
  r.rank = rank;
  r.generation = generation;
  return r;
}

TableRecord KeyRecord(const std::string& job_id, const std::string& key,
                      const std::string& value) {
  TableRecord r = RecordOf(TableRecord::Kind::kKey, job_id);
  r.key = key;
  r.value = value;
  return r;
}

TableRecord EndRecord(const std::string& job_id) {
  return RecordOf(TableRecord::Kind::kEnd, job_id);
}

TableRecord BarrierRecord(const std::string& job_id, const std::string& name,
                          const std::vector<uint64_t>& entries) {
  TableRecord r = RecordOf(TableRecord::Kind::kBarrier, job_id);
  r.key = name;
  r.entries = entries;
  return r;
}

bool IsEphemeralKey(const std::string& key) {
  return key.rfind(kMetricsKeyPrefix, 0) == 0 ||
         key.rfind(kArrivalsKeyPrefix, 0) == 0;
}

void JobTable::SetJournal(TableJournal* journal) {
  std::lock_guard<std::mutex> lock(mu_);
  journal_.store(journal, std::memory_order_release);
}

void JobTable::WhenDurable(std::function<void(const Status&)> then) const {
  TableJournal* journal = journal_.load(std::memory_order_acquire);
  if (journal == nullptr) return then(Status::Ok());
  journal->WhenDurable(std::move(then));
}

void JobTable::AbandonDurability(const Status& why) const {
  TableJournal* journal = journal_.load(std::memory_order_acquire);
  if (journal != nullptr) journal->Abandon(why);
}

Status JobTable::JournalLocked(const TableRecord& record) {
  TableJournal* journal = journal_.load(std::memory_order_relaxed);
  if (!journal) return Status::Ok();
  // Before the record: the table holds every change journaled so far (each
  // is made right after its record), and not yet this one, which goes to
  // the journal after the snapshot. A snapshot that fails leaves the
  // journal as it was, only longer.
  if (journal->WantsSnapshot()) {
    (void)journal->Compact(SnapshotRecordsLocked());
  }
  Status s = journal->Append(record);
  last_write_ = s;
  return s;
}

Status JobTable::Restore(const TableRecord& r) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(r.job_id);
  if (r.kind == TableRecord::Kind::kJob) {
    if (it != jobs_.end()) return Contradicts(r, "the job is created twice");
    if (r.job_id.empty() || r.token_hash.empty()) {
      return Contradicts(r, "a job needs an id and a token hash");
    }
    Job job;
    LayOut(job, r.hosts);
    job.token_hash = r.token_hash;
    job.elastic = r.elastic;
    job.epoch = r.epoch;
    if (limits_.job_ttl_seconds > 0) {
      job.expires = now_() + std::chrono::seconds(limits_.job_ttl_seconds);
      expiries_.insert({job.expires, r.job_id});
    }
    jobs_.emplace(r.job_id, std::move(job));
    return Status::Ok();
  }
  if (it == jobs_.end()) {
    return Contradicts(r, "the records before it never created the job");
  }
  Job& job = it->second;
  switch (r.kind) {
    case TableRecord::Kind::kMembership:
      if (!job.elastic) return Contradicts(r, "a fixed job changes members");
      LayOut(job, r.hosts);
      job.epoch = r.epoch;
      job.joined.clear();
      return Status::Ok();
    case TableRecord::Kind::kJoined:
      if (r.rank < 0 || r.rank >= static_cast<int>(job.assignments.size())) {
        return Contradicts(
            r, "rank " + std::to_string(r.rank) + " is not one of the job's");
      }
      if (!job.elastic) job.generations[r.rank] = r.generation;
      job.joined.insert(r.rank);
      return Status::Ok();
    case TableRecord::Kind::kKey: {
      auto existing = job.kv.find(r.key);
      if (existing != job.kv.end()) {
        job.bytes -= r.key.size() + existing->second.size();
      }
      job.bytes += r.key.size() + r.value.size();
      job.kv[r.key] = r.value;
      return Status::Ok();
    }
    case TableRecord::Kind::kEnd:
      expiries_.erase({job.expires, r.job_id});
      jobs_.erase(it);
      return Status::Ok();
    case TableRecord::Kind::kBarrier:
      if (r.key.empty()) return Contradicts(r, "a barrier needs a name");
      job.last_round = r.key;
      job.last_entries = r.entries;
      return Status::Ok();
    case TableRecord::Kind::kJob:
      break;
  }
  return Contradicts(r, "unknown kind of record");
}

std::vector<TableRecord> JobTable::SnapshotRecords() const {
  std::lock_guard<std::mutex> lock(mu_);
  return SnapshotRecordsLocked();
}

std::vector<TableRecord> JobTable::SnapshotRecordsLocked() const {
  std::vector<TableRecord> out;
  for (const auto& [id, job] : jobs_) {
    out.push_back(
        JobRecord(id, job.token_hash, job.elastic, job.hosts, job.epoch));
    for (int rank : job.joined) {
      out.push_back(JoinedRecord(
          id, rank, job.elastic ? job.epoch : job.generations[rank]));
    }
    for (const auto& [key, value] : job.kv) {
      if (!IsEphemeralKey(key)) out.push_back(KeyRecord(id, key, value));
    }
    if (!job.last_round.empty()) {
      out.push_back(BarrierRecord(id, job.last_round, job.last_entries));
    }
  }
  return out;
}

}  // namespace hvd::rendezvous
