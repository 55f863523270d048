#include "rendezvous/job_table.h"

#include <algorithm>

#include "common/random.h"

namespace hvd::rendezvous {
namespace {

std::string JoinNames(const std::vector<std::string>& names, size_t limit) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < limit; ++i) {
    if (i) out += ", ";
    out += "'" + names[i] + "'";
  }
  if (names.size() > limit) {
    out += " and " + std::to_string(names.size() - limit) + " more";
  }
  return out;
}

}  // namespace

StatusOr<CreatedJob> JobTable::CreateJob(std::vector<HostSlots> hosts,
                                         int size) {
  HVD_RETURN_IF_ERROR(ValidateHosts(hosts, size));
  HVD_ASSIGN_OR_RETURN(std::string token, RandomHex(32));
  Job job;
  job.assignments = ComputeAssignments(hosts);
  int rank = 0;
  for (const HostSlots& h : hosts) {
    job.first_rank[h.host] = rank;
    rank += h.slots;
  }
  job.hosts = std::move(hosts);
  job.token = token;

  std::lock_guard<std::mutex> lock(mu_);
  std::string id;
  do {
    HVD_ASSIGN_OR_RETURN(id, RandomHex(8));
  } while (jobs_.count(id));
  jobs_.emplace(id, std::move(job));
  return CreatedJob{id, token};
}

StatusOr<JobTable::Job*> JobTable::FindLocked(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) {
    return Status::NotFound("job '" + job_id + "'",
                            "no such job (it ended or never existed)");
  }
  return &it->second;
}

StatusOr<const JobTable::Job*> JobTable::FindLocked(
    const std::string& job_id) const {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) {
    return Status::NotFound("job '" + job_id + "'",
                            "no such job (it ended or never existed)");
  }
  return &it->second;
}

Status JobTable::Authenticate(const std::string& job_id,
                              const std::string& token) const {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(const Job* job, FindLocked(job_id));
  if (token.empty()) {
    return Status::Unauthenticated("job '" + job_id + "'",
                                   "no job token was sent");
  }
  if (!ConstantTimeEquals(token, job->token)) {
    return Status::Unauthenticated("job '" + job_id + "'",
                                   "the job token is wrong");
  }
  return Status::Ok();
}

StatusOr<Assignment> JobTable::Join(const std::string& job_id,
                                    const std::string& host, int slot) {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(Job * job, FindLocked(job_id));
  auto it = job->first_rank.find(host);
  if (it == job->first_rank.end()) {
    return Status::InvalidArgument(
        "host", "'" + host + "' is not one of the job's hosts");
  }
  int first = it->second;
  int slots = job->assignments[first].local_size;
  if (slot < 0 || slot >= slots) {
    return Status::InvalidArgument(
        "slot", std::to_string(slot) + " is out of range for host '" + host +
                    "', which has " + std::to_string(slots) + " slots");
  }
  int rank = first + slot;
  job->joined.insert(rank);
  return job->assignments[rank];
}

StatusOr<std::vector<int>> JobTable::JoinedRanks(
    const std::string& job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(const Job* job, FindLocked(job_id));
  return std::vector<int>(job->joined.begin(), job->joined.end());
}

Status JobTable::Set(const std::string& job_id, const std::string& key,
                     std::string value) {
  if (key.empty()) return Status::InvalidArgument("key", "is empty");
  std::vector<Completion> completions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    HVD_ASSIGN_OR_RETURN(Job * job, FindLocked(job_id));
    bool is_new = job->kv.insert_or_assign(key, std::move(value)).second;
    if (is_new) {
      auto waiting = job->waiting_on.find(key);
      if (waiting != job->waiting_on.end()) {
        std::vector<WaitId> ids = std::move(waiting->second);
        job->waiting_on.erase(waiting);
        for (WaitId id : ids) {
          auto w = waiters_.find(id);
          if (w == waiters_.end()) continue;
          if (--w->second.missing == 0) {
            completions.push_back(FinishLocked(id, Status::Ok()));
          }
        }
      }
    }
  }
  RunAll(completions);
  return Status::Ok();
}

StatusOr<std::string> JobTable::Get(const std::string& job_id,
                                    const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(const Job* job, FindLocked(job_id));
  auto it = job->kv.find(key);
  if (it == job->kv.end()) {
    return Status::NotFound("key '" + key + "'", "has not been set");
  }
  return it->second;
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
                                   BarrierCallback done) {
  std::vector<Completion> completions;
  WaitId id = 0;
  Status error;
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
    } else {
      Job& j = **job;
      BarrierRound& round = j.barriers[name];
      Waiter w;
      w.job_id = job_id;
      w.barrier = name;
      w.rank = rank;
      w.deadline = deadline;
      w.on_barrier = std::move(done);
      id = AddWaiterLocked(j, std::move(w));
      round.ranks.insert(rank);
      round.waiters.push_back(id);
      if (round.ranks.size() == j.assignments.size()) {
        std::vector<WaitId> ids = std::move(round.waiters);
        j.barriers.erase(name);
        for (WaitId w_id : ids) {
          completions.push_back(FinishLocked(w_id, Status::Ok()));
        }
        id = 0;
      }
    }
  }
  if (!error.ok()) {
    done(error);
    return 0;
  }
  RunAll(completions);
  return id;
}

JobTable::Completion JobTable::FinishLocked(WaitId id, const Status& status) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return [] {};
  Waiter w = std::move(it->second);
  waiters_.erase(it);
  deadlines_.erase({w.deadline, id});
  auto job_it = jobs_.find(w.job_id);
  if (job_it != jobs_.end()) {
    Job& job = job_it->second;
    job.waiters.erase(id);
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
  if (job_it != jobs_.end()) {
    for (const std::string& k : w.keys) values.push_back(job_it->second.kv[k]);
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

std::optional<Clock::time_point> JobTable::Expire(Clock::time_point now) {
  std::vector<Completion> completions;
  std::optional<Clock::time_point> next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      WaitId id = deadlines_.begin()->second;
      const Waiter& w = waiters_.at(id);
      Status status;
      if (!w.barrier.empty()) {
        std::vector<std::string> missing;
        auto job = jobs_.find(w.job_id);
        if (job != jobs_.end()) {
          const auto& round = job->second.barriers[w.barrier];
          for (size_t r = 0; r < job->second.assignments.size(); ++r) {
            if (!round.ranks.count(static_cast<int>(r))) {
              missing.push_back(std::to_string(r));
            }
          }
        }
        status = Status::DeadlineExceeded(
            "barrier '" + w.barrier + "'",
            "timed out waiting for rank(s) " + JoinNames(missing, 16));
      } else {
        std::vector<std::string> missing;
        auto job = jobs_.find(w.job_id);
        for (const std::string& k : w.keys) {
          if (job == jobs_.end() || !job->second.kv.count(k)) {
            missing.push_back(k);
          }
        }
        status = Status::DeadlineExceeded(
            "wait", "timed out waiting for key(s) " + JoinNames(missing, 8));
      }
      completions.push_back(FinishLocked(id, status));
    }
    if (!deadlines_.empty()) next = deadlines_.begin()->first;
  }
  RunAll(completions);
  return next;
}

Status JobTable::EndJob(const std::string& job_id, const std::string& reason) {
  std::vector<Completion> completions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    HVD_ASSIGN_OR_RETURN(Job * job, FindLocked(job_id));
    std::vector<WaitId> ids(job->waiters.begin(), job->waiters.end());
    for (WaitId id : ids) {
      completions.push_back(FinishLocked(
          id, Status::Aborted("job '" + job_id + "' ended", reason)));
    }
    jobs_.erase(job_id);
  }
  RunAll(completions);
  return Status::Ok();
}

void JobTable::CancelAll(const std::string& reason) {
  std::vector<Completion> completions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<WaitId> ids;
    for (const auto& [id, w] : waiters_) ids.push_back(id);
    for (WaitId id : ids) {
      completions.push_back(FinishLocked(id, Status::Cancelled(reason)));
    }
  }
  RunAll(completions);
}

size_t JobTable::JobCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.size();
}

}  // namespace hvd::rendezvous
