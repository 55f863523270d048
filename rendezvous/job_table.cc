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

void JobTable::LayOut(Job& job, std::vector<HostSlots> hosts) {
  job.assignments = ComputeAssignments(hosts);
  job.generations.assign(job.assignments.size(), 0);
  job.first_rank.clear();
  int rank = 0;
  for (const HostSlots& h : hosts) {
    job.first_rank[h.host] = rank;
    rank += h.slots;
  }
  job.hosts = std::move(hosts);
}

StatusOr<CreatedJob> JobTable::CreateJob(std::vector<HostSlots> hosts, int size,
                                         bool elastic) {
  // An elastic job may start with no members (epoch 0): its launcher
  // learns its hosts later, and joins wait for the first membership.
  const bool no_members_yet = elastic && hosts.empty() && size == 0;
  if (!no_members_yet) HVD_RETURN_IF_ERROR(ValidateHosts(hosts, size));
  HVD_ASSIGN_OR_RETURN(std::string token, RandomHex(32));
  Job job;
  LayOut(job, std::move(hosts));
  job.token = token;
  job.elastic = elastic;
  if (no_members_yet) job.epoch = 0;

  std::lock_guard<std::mutex> lock(mu_);
  if (jobs_.size() >= limits_.max_jobs) {
    return Status::ResourceExhausted(
        "CreateJob", std::to_string(limits_.max_jobs) +
                         " jobs run already, the daemon's limit (raise "
                         "--max-jobs, or end finished jobs)");
  }
  std::string id;
  do {
    HVD_ASSIGN_OR_RETURN(id, RandomHex(8));
  } while (jobs_.count(id));
  if (limits_.job_ttl_seconds > 0) {
    job.expires = now_() + std::chrono::seconds(limits_.job_ttl_seconds);
    expiries_.insert({job.expires, id});
  }
  jobs_.emplace(id, std::move(job));
  return CreatedJob{id, token, limits_.job_ttl_seconds};
}

Status JobTable::KeepAlive(const std::string& job_id) {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(Job * job, FindLocked(job_id));
  if (limits_.job_ttl_seconds <= 0) return Status::Ok();
  expiries_.erase({job->expires, job_id});
  job->expires = now_() + std::chrono::seconds(limits_.job_ttl_seconds);
  expiries_.insert({job->expires, job_id});
  return Status::Ok();
}

StatusOr<JobInfo> JobTable::Info(const std::string& job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(const Job* job, FindLocked(job_id));
  JobInfo info;
  info.size = static_cast<int>(job->assignments.size());
  info.joined.assign(job->joined.begin(), job->joined.end());
  return info;
}

StatusOr<JobTable::Job*> JobTable::FindLocked(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) {
    return Status::NotFound(
        "job '" + job_id + "'",
        "no such job (it ended, expired, or the rendezvous server restarted)");
  }
  return &it->second;
}

StatusOr<const JobTable::Job*> JobTable::FindLocked(
    const std::string& job_id) const {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) {
    return Status::NotFound(
        "job '" + job_id + "'",
        "no such job (it ended, expired, or the rendezvous server restarted)");
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

StatusOr<Assignment> JobTable::SlotLocked(const Job& job,
                                          const std::string& host,
                                          int slot) const {
  auto it = job.first_rank.find(host);
  if (it == job.first_rank.end()) {
    if (job.elastic) {
      return Status::FailedPrecondition(
          "host", "'" + host +
                      "' is not one of the job's hosts now (the launcher "
                      "removed it)");
    }
    return Status::InvalidArgument(
        "host", "'" + host + "' is not one of the job's hosts");
  }
  int first = it->second;
  int slots = job.assignments[first].local_size;
  if (slot < 0) {
    return Status::InvalidArgument("slot", "is negative");
  }
  if (slot >= slots) {
    return Status::FailedPrecondition(
        "slot", std::to_string(slot) + " is out of range for host '" + host +
                    "', which has " + std::to_string(slots) + " slots");
  }
  return job.assignments[first + slot];
}

std::optional<StatusOr<Assignment>> JobTable::JoinLocked(
    Job& job, const std::string& host, int slot, int previous) {
  if (job.elastic) {
    // The generation is the membership's epoch, alike for every member.
    if (previous < 0 || previous > job.epoch) {
      return StatusOr<Assignment>(Status::FailedPrecondition(
          "generation", "left generation " + std::to_string(previous) +
                            " but the job is at " + std::to_string(job.epoch) +
                            " (was the rendezvous restarted?)"));
    }
    if (previous == job.epoch) return std::nullopt;  // wait for the next
    StatusOr<Assignment> a = SlotLocked(job, host, slot);
    if (!a.ok()) return a;
    job.joined.insert(a->rank);
    a->generation = job.epoch;
    return a;
  }
  StatusOr<Assignment> found = SlotLocked(job, host, slot);
  if (!found.ok()) return found;
  return JoinFixedLocked(job, found->rank, previous);
}

StatusOr<Assignment> JobTable::Join(const std::string& job_id,
                                    const std::string& host, int slot,
                                    int previous_generation) {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(Job * job, FindLocked(job_id));
  auto answer = JoinLocked(*job, host, slot, previous_generation);
  if (!answer) {
    return Status::FailedPrecondition(
        "generation", std::to_string(previous_generation) +
                          " is the job's current membership; wait for the "
                          "next one (JoinWait)");
  }
  return *answer;
}

StatusOr<Assignment> JobTable::JoinFixedLocked(Job& job, int rank,
                                               int previous_generation) {
  int& current = job.generations[rank];
  if (previous_generation < 0 || previous_generation > current) {
    return Status::FailedPrecondition(
        "generation", "rank " + std::to_string(rank) + " left generation " +
                          std::to_string(previous_generation) +
                          " but the job has only reached " +
                          std::to_string(current) +
                          " (was the rendezvous restarted?)");
  }
  if (previous_generation == current) ++current;
  job.joined.insert(rank);
  Assignment a = job.assignments[rank];
  a.generation = current;
  return a;
}

JobTable::WaitId JobTable::JoinWait(const std::string& job_id,
                                    const std::string& host, int slot,
                                    int previous_generation,
                                    Clock::time_point deadline,
                                    JoinCallback done) {
  StatusOr<Assignment> answer = Status::Internal("unset");
  std::vector<Completion> completions;
  WaitId id = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto job = FindLocked(job_id);
    if (!job.ok()) {
      answer = job.status();
    } else if (auto now = JoinLocked(**job, host, slot, previous_generation)) {
      answer = *now;
    } else {
      Waiter w;
      w.job_id = job_id;
      w.deadline = deadline;
      w.on_join = std::move(done);
      w.host = host;
      w.slot = slot;
      id = AddWaiterLocked(**job, std::move(w));
      (*job)->joiners.push_back(id);
      if (EveryMemberWaitsLocked(**job)) {
        // Every member left this epoch (a collective failed everywhere and
        // no process died): the same hosts make the next one, as a new
        // membership from the launcher would, so nobody waits for it.
        std::vector<HostSlots> same = (*job)->hosts;
        auto epoch =
            NewEpochLocked(**job, job_id, std::move(same), completions);
        if (!epoch.ok()) {
          completions.push_back(FinishJoinLocked(id, epoch.status()));
        }
      }
    }
  }
  if (id == 0) {
    done(std::move(answer));
    return 0;
  }
  RunAll(completions);
  return id;
}

StatusOr<int> JobTable::SetMembership(const std::string& job_id,
                                      std::vector<HostSlots> hosts, int size) {
  HVD_RETURN_IF_ERROR(ValidateHosts(hosts, size));
  std::vector<Completion> completions;
  int epoch = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    HVD_ASSIGN_OR_RETURN(Job * job, FindLocked(job_id));
    if (!job->elastic) {
      return Status::FailedPrecondition(
          "job '" + job_id + "'",
          "is not elastic: its hosts are fixed when it is created");
    }
    HVD_ASSIGN_OR_RETURN(
        epoch, NewEpochLocked(*job, job_id, std::move(hosts), completions));
  }
  RunAll(completions);
  return epoch;
}

StatusOr<int> JobTable::NewEpochLocked(Job& job, const std::string& job_id,
                                       std::vector<HostSlots> hosts,
                                       std::vector<Completion>& completions) {
  // Published for workers (Context::MembershipChanged) as any key is, so
  // waits on it complete; first, so a refusal changes nothing.
  HVD_RETURN_IF_ERROR(SetLocked(job, job_id, kMembershipEpochKey,
                                std::to_string(job.epoch + 1), completions));
  LayOut(job, std::move(hosts));
  const int epoch = ++job.epoch;
  job.joined.clear();
  // Rounds of the old membership cannot complete: their ranks are gone.
  std::vector<WaitId> in_rounds;
  for (auto& [name, round] : job.barriers) {
    in_rounds.insert(in_rounds.end(), round.waiters.begin(),
                     round.waiters.end());
  }
  const Status moved =
      Status::Aborted("job '" + job_id + "'", "its membership changed (epoch " +
                                                  std::to_string(epoch) + ")");
  for (WaitId id : in_rounds) completions.push_back(FinishLocked(id, moved));
  // Joins waiting for this epoch get their place in it.
  std::vector<WaitId> joiners;
  joiners.swap(job.joiners);
  for (WaitId id : joiners) {
    auto it = waiters_.find(id);
    if (it == waiters_.end()) continue;
    auto a = JoinLocked(job, it->second.host, it->second.slot, epoch - 1);
    completions.push_back(FinishJoinLocked(id, *a));
  }
  return epoch;
}

bool JobTable::EveryMemberWaitsLocked(const Job& job) const {
  if (job.assignments.empty()) return false;
  std::set<int> ranks;
  for (WaitId id : job.joiners) {
    auto it = waiters_.find(id);
    if (it == waiters_.end()) continue;
    auto a = SlotLocked(job, it->second.host, it->second.slot);
    if (a.ok()) ranks.insert(a->rank);
  }
  return ranks.size() == job.assignments.size();
}

JobTable::Waiter JobTable::TakeWaiterLocked(
    std::unordered_map<WaitId, Waiter>::iterator it, Job** job) {
  const WaitId id = it->first;
  Waiter w = std::move(it->second);
  waiters_.erase(it);
  deadlines_.erase({w.deadline, id});
  auto job_it = jobs_.find(w.job_id);
  *job = job_it == jobs_.end() ? nullptr : &job_it->second;
  if (*job) (*job)->waiters.erase(id);
  return w;
}

JobTable::Completion JobTable::FinishJoinLocked(WaitId id,
                                                StatusOr<Assignment> a) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return [] {};
  Job* job = nullptr;
  Waiter w = TakeWaiterLocked(it, &job);
  if (job) {
    auto& ids = job->joiners;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
  }
  return [cb = std::move(w.on_join), a = std::move(a)]() mutable {
    cb(std::move(a));
  };
}

StatusOr<std::vector<int>> JobTable::JoinedRanks(
    const std::string& job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(const Job* job, FindLocked(job_id));
  return std::vector<int>(job->joined.begin(), job->joined.end());
}

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

std::optional<Clock::time_point> JobTable::Expire(Clock::time_point now) {
  std::vector<Completion> completions;
  std::optional<Clock::time_point> next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      WaitId id = deadlines_.begin()->second;
      const Waiter& w = waiters_.at(id);
      Status status;
      if (w.on_join) {
        status = Status::DeadlineExceeded(
            "join", "host " + w.host + " slot " + std::to_string(w.slot) +
                        " waited for the job's next membership in vain");
      } else if (!w.barrier.empty()) {
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
    while (!expiries_.empty() && expiries_.begin()->first <= now) {
      std::string id = expiries_.begin()->second;
      EndJobLocked(id,
                   Status::Aborted("job '" + id + "' expired",
                                   "its creator sent no keep-alive for " +
                                       std::to_string(limits_.job_ttl_seconds) +
                                       " s (the launcher died or lost the "
                                       "network)"),
                   completions);
    }
    if (!deadlines_.empty()) next = deadlines_.begin()->first;
    if (!expiries_.empty() && (!next || expiries_.begin()->first < *next)) {
      next = expiries_.begin()->first;
    }
  }
  RunAll(completions);
  return next;
}

void JobTable::EndJobLocked(const std::string& job_id, const Status& why,
                            std::vector<Completion>& completions) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) return;
  std::vector<WaitId> ids(it->second.waiters.begin(), it->second.waiters.end());
  for (WaitId id : ids) completions.push_back(FinishLocked(id, why));
  expiries_.erase({it->second.expires, job_id});
  jobs_.erase(job_id);
}

Status JobTable::EndJob(const std::string& job_id, const std::string& reason) {
  std::vector<Completion> completions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    HVD_RETURN_IF_ERROR(FindLocked(job_id).status());
    EndJobLocked(job_id, Status::Aborted("job '" + job_id + "' ended", reason),
                 completions);
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

size_t JobTable::JoinedCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [id, job] : jobs_) n += job.joined.size();
  return n;
}

size_t JobTable::BlockedCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiters_.size();
}

}  // namespace hvd::rendezvous
