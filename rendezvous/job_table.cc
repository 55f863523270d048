#include "rendezvous/job_table.h"

#include <algorithm>

#include "common/random.h"
#include "rendezvous/token_hash.h"

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
                                         bool elastic,
                                         const std::string& creation_key) {
  // An elastic job may start with no members (epoch 0): its launcher
  // learns its hosts later, and joins wait for the first membership.
  const bool no_members_yet = elastic && hosts.empty() && size == 0;
  if (!no_members_yet) HVD_RETURN_IF_ERROR(ValidateHosts(hosts, size));
  constexpr size_t kShortestKey = 32;
  if (!creation_key.empty() && creation_key.size() < kShortestKey) {
    return Status::InvalidArgument(
        "creation key", "must be a random secret of at least 32 characters");
  }
  std::string token = creation_key;
  if (token.empty()) {
    HVD_ASSIGN_OR_RETURN(token, RandomHex(32));
  }
  Job job;
  LayOut(job, std::move(hosts));
  job.token_hash = HashToken(token);
  job.elastic = elastic;
  if (no_members_yet) job.epoch = 0;

  std::lock_guard<std::mutex> lock(mu_);
  if (!creation_key.empty()) {
    for (const auto& [id, made] : jobs_) {
      if (made.token_hash == job.token_hash) {  // a repeated try
        return CreatedJob{id, token, limits_.job_ttl_seconds};
      }
    }
  }
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
  HVD_RETURN_IF_ERROR(JournalLocked(
      JobRecord(id, job.token_hash, job.elastic, job.hosts, job.epoch)));
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
  if (!ConstantTimeEquals(HashToken(token), job->token_hash)) {
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
    Job& job, const std::string& job_id, const std::string& host, int slot,
    int previous) {
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
    if (!job.joined.count(a->rank)) {
      Status s = JournalLocked(JoinedRecord(job_id, a->rank, job.epoch));
      if (!s.ok()) return StatusOr<Assignment>(s);
    }
    job.joined.insert(a->rank);
    a->generation = job.epoch;
    return a;
  }
  StatusOr<Assignment> found = SlotLocked(job, host, slot);
  if (!found.ok()) return found;
  return JoinFixedLocked(job, job_id, found->rank, previous);
}

StatusOr<Assignment> JobTable::Join(const std::string& job_id,
                                    const std::string& host, int slot,
                                    int previous_generation) {
  std::lock_guard<std::mutex> lock(mu_);
  HVD_ASSIGN_OR_RETURN(Job * job, FindLocked(job_id));
  auto answer = JoinLocked(*job, job_id, host, slot, previous_generation);
  if (!answer) {
    return Status::FailedPrecondition(
        "generation", std::to_string(previous_generation) +
                          " is the job's current membership; wait for the "
                          "next one (JoinWait)");
  }
  return *answer;
}

StatusOr<Assignment> JobTable::JoinFixedLocked(Job& job,
                                               const std::string& job_id,
                                               int rank,
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
  const int next = previous_generation == current ? current + 1 : current;
  if (next != current || !job.joined.count(rank)) {
    HVD_RETURN_IF_ERROR(JournalLocked(JoinedRecord(job_id, rank, next)));
  }
  current = next;
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
    } else if (auto now =
                   JoinLocked(**job, job_id, host, slot, previous_generation)) {
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
                                      std::vector<HostSlots> hosts, int size,
                                      int from_epoch) {
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
    if (from_epoch >= 0 && job->epoch != from_epoch) {
      if (job->epoch == from_epoch + 1 && job->hosts == hosts) {
        return job->epoch;  // made already: the caller's answer was lost
      }
      return Status::FailedPrecondition(
          "job '" + job_id + "'",
          "is at membership epoch " + std::to_string(job->epoch) + ", not " +
              std::to_string(from_epoch) + " (another launcher changed it?)");
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
  HVD_RETURN_IF_ERROR(
      JournalLocked(MembershipRecord(job_id, hosts, job.epoch + 1)));
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
    auto a =
        JoinLocked(job, job_id, it->second.host, it->second.slot, epoch - 1);
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
  // The job ends here whatever the journal says: at worst a restart
  // brings it back, and its TTL or its launcher ends it again.
  (void)JournalLocked(EndRecord(job_id));
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

void JobTable::CancelAll(const Status& why) {
  std::vector<Completion> completions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<WaitId> ids;
    for (const auto& [id, w] : waiters_) ids.push_back(id);
    for (WaitId id : ids) {
      completions.push_back(FinishLocked(id, why));
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
