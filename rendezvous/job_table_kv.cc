// The job table's key-value store: setting and reading keys, waits on
// keys and barriers, and how a wait completes (job_table.h).
#include <algorithm>

#include "common/parse.h"
#include "rendezvous/job_table.h"
#include "rendezvous/members.h"

namespace hvd::rendezvous {

Status JobTable::Set(const std::string& job_id, const std::string& key,
                     std::string value) {
  std::vector<Completion> completions;
  Status s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    HVD_ASSIGN_OR_RETURN(Job * job, FindLocked(job_id));
    s = SetLocked(*job, job_id, key, std::move(value), completions);
  }
  RunAll(completions);
  return s;
}

Status JobTable::SetLocked(Job& job, const std::string& job_id,
                           const std::string& key, std::string value,
                           std::vector<Completion>& completions) {
  if (key.empty()) return Status::InvalidArgument("key", "is empty");
  if (key == kMembersKey) {
    return Status::InvalidArgument(
        "key '" + key + "'", "is the table's own list of members; read it");
  }
  if (value.size() > limits_.max_value_bytes) {
    return Status::ResourceExhausted(
        "key '" + key + "'", "value of " + std::to_string(value.size()) +
                                 " bytes is over the " +
                                 std::to_string(limits_.max_value_bytes) +
                                 "-byte limit (raise --max-value-bytes)");
  }
  auto existing = job.kv.find(key);
  size_t old_bytes =
      existing == job.kv.end() ? 0 : key.size() + existing->second.size();
  size_t new_bytes = job.bytes - old_bytes + key.size() + value.size();
  if (existing == job.kv.end() && job.kv.size() >= limits_.max_keys_per_job) {
    return Status::ResourceExhausted(
        "job '" + job_id + "'",
        "has " + std::to_string(job.kv.size()) +
            " keys, the limit per job (raise --max-keys-per-job)");
  }
  if (new_bytes > limits_.max_job_bytes) {
    return Status::ResourceExhausted(
        "job '" + job_id + "'",
        "would hold " + std::to_string(new_bytes) + " bytes, over the " +
            std::to_string(limits_.max_job_bytes) +
            "-byte limit per job (raise --max-job-bytes)");
  }
  if (!IsEphemeralKey(key)) {
    HVD_RETURN_IF_ERROR(JournalLocked(KeyRecord(job_id, key, value)));
  }
  job.bytes = new_bytes;
  if (existing != job.kv.end()) {
    existing->second = std::move(value);
    return Status::Ok();
  }
  job.kv.emplace(key, std::move(value));
  auto waiting = job.waiting_on.find(key);
  if (waiting != job.waiting_on.end()) {
    std::vector<WaitId> ids = std::move(waiting->second);
    job.waiting_on.erase(waiting);
    for (WaitId id : ids) {
      auto w = waiters_.find(id);
      if (w == waiters_.end()) continue;
      if (--w->second.missing == 0) {
        completions.push_back(FinishLocked(id, Status::Ok()));
      }
    }
  }
  return Status::Ok();
}

StatusOr<std::string> JobTable::Get(const std::string& job_id,
                                    const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(const Job* job, FindLocked(job_id));
  if (key == kMembersKey) return MembersLocked(*job);
  auto it = job->kv.find(key);
  if (it == job->kv.end()) {
    return Status::NotFound("key '" + key + "'", "has not been set");
  }
  return it->second;
}

StatusOr<std::map<std::string, std::string>> JobTable::GetPrefix(
    const std::string& job_id, const std::string& prefix) const {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(const Job* job, FindLocked(job_id));
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : job->kv) {
    if (key.rfind(prefix, 0) == 0) out.emplace(key, value);
  }
  return out;
}

std::string JobTable::MembersLocked(const Job& job) {
  return FormatMembers(MemberListLocked(job));
}

std::vector<Member> JobTable::MemberListLocked(const Job& job) {
  std::vector<Member> members;
  int rank = 0;
  for (const HostSlots& h : job.hosts) {
    for (int slot = 0; slot < h.slots; ++slot, ++rank) {
      Member m;
      m.rank = rank;
      m.host = h.host;
      m.slot = slot;
      if (!job.elastic) {
        m.generation = job.generations[rank];
      } else if (job.joined.count(rank)) {
        m.generation = job.epoch;
      }
      auto exit = job.kv.find(ExitKey(h.host, slot));
      if (exit != job.kv.end()) {
        auto code = ParseInt64(exit->second, "exit", 0, 255);
        if (code.ok()) m.exit_status = static_cast<int>(*code);
      }
      members.push_back(std::move(m));
    }
  }
  return members;
}

JobTable::WaitId JobTable::AddWaiterLocked(Job& job, Waiter waiter) {
  WaitId id = next_id_++;
  deadlines_.insert({waiter.deadline, id});
  job.waiters.insert(id);
  waiters_.emplace(id, std::move(waiter));
  return id;
}

JobTable::WaitId JobTable::Wait(const std::string& job_id,
                                std::vector<std::string> keys,
                                Clock::time_point deadline, WaitCallback done) {
  StatusOr<std::vector<std::string>> answer = Status::Internal("unset");
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto job = FindLocked(job_id);
    if (!job.ok()) {
      answer = job.status();
    } else if (keys.empty()) {
      answer = Status::InvalidArgument("keys", "a wait needs at least one key");
    } else {
      Job& j = **job;
      std::vector<std::string> values;
      std::vector<std::string> missing;
      for (const std::string& k : keys) {
        auto it = j.kv.find(k);
        if (it == j.kv.end()) {
          missing.push_back(k);
        } else {
          values.push_back(it->second);
        }
      }
      if (missing.empty()) {
        answer = std::move(values);
      } else {
        // Each distinct missing key counts once, even if listed twice.
        std::sort(missing.begin(), missing.end());
        missing.erase(std::unique(missing.begin(), missing.end()),
                      missing.end());
        Waiter w;
        w.job_id = job_id;
        w.keys = std::move(keys);
        w.missing = missing.size();
        w.deadline = deadline;
        w.on_values = std::move(done);
        WaitId id = AddWaiterLocked(j, std::move(w));
        for (const std::string& k : missing) j.waiting_on[k].push_back(id);
        return id;
      }
    }
  }
  // Answered at once; callbacks never run under the lock.
  done(std::move(answer));
  return 0;
}

JobTable::WaitId JobTable::Barrier(const std::string& job_id,
                                   const std::string& name, int rank,
                                   Clock::time_point deadline,
                                   BarrierCallback done, uint64_t entry) {
  std::vector<Completion> completions;
  WaitId id = 0;
  Status error;
  bool passed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto job = FindLocked(job_id);
    if (!job.ok()) {
      error = job.status();
    } else if (name.empty()) {
      error = Status::InvalidArgument("barrier name", "is empty");
    } else if (rank < 0 ||
               rank >= static_cast<int>((*job)->assignments.size())) {
      error = Status::InvalidArgument(
          "rank", std::to_string(rank) + " is out of range for a job of " +
                      std::to_string((*job)->assignments.size()));
    } else if (PassedLocked(**job, name, entry)) {
      passed = true;
    } else {
      Job& j = **job;
      BarrierRound& round = j.barriers[name];
      Waiter w;
      w.job_id = job_id;
      w.barrier = name;
      w.entry = entry;
      w.rank = rank;
      w.deadline = deadline;
      w.on_barrier = std::move(done);
      id = AddWaiterLocked(j, std::move(w));
      round.ranks.insert(rank);
      round.waiters.push_back(id);
      if (round.ranks.size() == j.assignments.size()) {
        CompleteRoundLocked(j, job_id, name, completions);
        id = 0;
      }
    }
  }
  if (passed) {
    done(Status::Ok());
    return 0;
  }
  if (!error.ok()) {
    done(error);
    return 0;
  }
  RunAll(completions);
  return id;
}

bool JobTable::PassedLocked(const Job& job, const std::string& name,
                            uint64_t entry) const {
  return entry != 0 && name == job.last_round &&
         std::find(job.last_entries.begin(), job.last_entries.end(), entry) !=
             job.last_entries.end();
}

void JobTable::CompleteRoundLocked(Job& job, const std::string& job_id,
                                   const std::string& name,
                                   std::vector<Completion>& completions) {
  std::vector<WaitId> ids = std::move(job.barriers[name].waiters);
  job.barriers.erase(name);
  std::vector<uint64_t> entries;
  for (WaitId w_id : ids) {
    auto it = waiters_.find(w_id);
    if (it != waiters_.end() && it->second.entry != 0) {
      entries.push_back(it->second.entry);
    }
  }
  // Journaled before any is answered: a retry after a restart must find
  // its entry. A refused record fails the round (nobody passed it).
  Status s = JournalLocked(BarrierRecord(job_id, name, entries));
  if (s.ok()) {
    job.last_round = name;
    job.last_entries = std::move(entries);
  }
  for (WaitId w_id : ids) completions.push_back(FinishLocked(w_id, s));
}

JobTable::Completion JobTable::FinishLocked(WaitId id, const Status& status) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return [] {};
  if (it->second.on_join) {
    return FinishJoinLocked(id, status.ok()
                                    ? Status::Internal("join",
                                                       "finished without "
                                                       "an assignment")
                                    : status);
  }
  Job* job_ptr = nullptr;
  Waiter w = TakeWaiterLocked(it, &job_ptr);
  if (job_ptr) {
    Job& job = *job_ptr;
    if (!w.barrier.empty()) {
      auto round = job.barriers.find(w.barrier);
      if (round != job.barriers.end()) {
        auto& ids = round->second.waiters;
        ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
        // A rank that gave up leaves the round, so its next entry counts.
        bool still_in = false;
        for (WaitId other : ids) {
          auto o = waiters_.find(other);
          if (o != waiters_.end() && o->second.rank == w.rank) still_in = true;
        }
        if (!still_in && !status.ok()) round->second.ranks.erase(w.rank);
        if (ids.empty()) job.barriers.erase(round);
      }
    } else if (!status.ok()) {
      for (const std::string& k : w.keys) {
        auto waiting = job.waiting_on.find(k);
        if (waiting == job.waiting_on.end()) continue;
        auto& ids = waiting->second;
        ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
        if (ids.empty()) job.waiting_on.erase(waiting);
      }
    }
  }
  if (w.on_barrier) {
    return [cb = std::move(w.on_barrier), status] { cb(status); };
  }
  if (!status.ok()) {
    return [cb = std::move(w.on_values), status] { cb(status); };
  }
  std::vector<std::string> values;
  values.reserve(w.keys.size());
  if (job_ptr) {
    for (const std::string& k : w.keys) values.push_back(job_ptr->kv[k]);
  }
  return [cb = std::move(w.on_values), v = std::move(values)]() mutable {
    cb(std::move(v));
  };
}

void JobTable::RunAll(std::vector<Completion>& completions) {
  for (Completion& c : completions) c();
  completions.clear();
}

void JobTable::CancelWait(WaitId id) {
  if (id == 0) return;
  std::vector<Completion> completions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!waiters_.count(id)) return;
    completions.push_back(FinishLocked(
        id, Status::Cancelled("wait", "the client cancelled the call")));
  }
  RunAll(completions);
}

std::vector<JobSummary> JobTable::Summaries() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<JobSummary> out;
  const auto now = now_();
  for (const auto& [id, job] : jobs_) {
    JobSummary s;
    s.id = id;
    s.elastic = job.elastic;
    s.size = static_cast<int>(job.assignments.size());
    s.epoch = job.epoch;
    s.members = MemberListLocked(job);
    s.keys = job.kv.size();
    s.bytes = job.bytes;
    if (limits_.job_ttl_seconds > 0) {
      s.expires_in_s = std::chrono::duration<double>(job.expires - now).count();
    }
    out.push_back(std::move(s));
  }
  std::sort(
      out.begin(), out.end(),
      [](const JobSummary& a, const JobSummary& b) { return a.id < b.id; });
  return out;
}

Status JobTable::LastWrite() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_write_;
}

}  // namespace hvd::rendezvous
