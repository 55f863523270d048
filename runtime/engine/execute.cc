// The engine's execution half: what needs no collective completes at once,
// the rest runs in the fusion planner's groups on the executor, and the
// handles complete (see the protocol in engine.h). Runs on the engine
// thread only.
#include <algorithm>
#include <cstring>

#include "runtime/engine/engine.h"
#include "runtime/engine/fusion.h"
#include "runtime/engine/response_cache.h"
#include "runtime/metrics.h"
#include "runtime/timeline.h"

namespace hvd::runtime {

bool Engine::Remember(const Request& r) {
  if (!cache_enabled_) return false;
  // Counts (and splits) differ per rank: a bit cannot stand for them.
  if (r.type != OpType::kAllreduce && r.type != OpType::kBroadcast &&
      r.type != OpType::kReducescatter) {
    return false;
  }
  std::optional<ResponseCache::Evicted> evicted = cache_.Put(r);
  if (!evicted) return false;
  negotiator_.ForgetCached(evicted->id);
  // Every rank evicts the same entry at the same point. If this rank had
  // that tensor pending through the cache, it is sent again in full.
  if (my_cached_.erase(evicted->id)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (Pending* p = FindPendingLocked(evicted->name)) {
      fresh_.push_back(p);
    }
  }
  return true;
}

Status Engine::Execute(std::vector<Agreed>& ready) {
  const std::vector<bool>& joined = negotiator_.joined();
  const bool any_joined =
      std::any_of(joined.begin(), joined.end(), [](bool b) { return b; });
  // What needs no collective completes here and now (every rank decides
  // alike); the rest runs below, in order, as the fusion planner groups it.
  std::vector<Pending*> collective;
  const auto negotiated = std::chrono::steady_clock::now();
  for (Agreed& agreed : ready) {
    const std::string& name = agreed.name;
    const Request& meta = agreed.meta;
    Pending* p = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      p = FindPendingLocked(name);
    }
    std::string mismatch = std::move(agreed.mismatch);
    if (mismatch.empty() && any_joined && meta.type != OpType::kBarrier &&
        (meta.type != OpType::kAllreduce || meta.device >= 0)) {
      std::string who;
      for (size_t r = 0; r < joined.size(); ++r) {
        if (joined[r]) who += (who.empty() ? "" : ", ") + std::to_string(r);
      }
      mismatch = "cannot run while rank(s) " + who +
                 " have joined: only host allreduces take part in a join";
    }
    if (!p) {
      // A rank that joined stands in with zeros for what it never named.
      // (Or an error every rank agreed on: nothing to run here.)
      if (!mismatch.empty() || meta.type == OpType::kBarrier) continue;
      Pending stand_in;
      stand_in.request = meta;
      stand_in.placeholder = true;
      stand_in.own.assign(
          static_cast<size_t>(meta.count) * DataTypeSize(meta.dtype), 0);
      stand_in.data = stand_in.own.data();
      stand_in.done = std::make_shared<Completion>();
      placeholders_[name] = std::move(stand_in);
      p = &placeholders_[name];
    }
    flight_.Mark(p->flight, FlightRecorder::Phase::kNegotiated, negotiated);
    if (!mismatch.empty()) {
      Status err = Status::InvalidArgument("tensor '" + name + "'", mismatch);
      flight_.Finished(p->flight, negotiated, false);
      std::shared_ptr<Completion> done = p->done;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!p->placeholder) {
          EndPendingLocked(*p);
          if (meta.type == OpType::kAllreduce) AllreducesDoneLocked(1);
        }
      }
      done->Set(err);
      continue;
    }
    p->counts = std::move(agreed.counts);
    p->all_splits = std::move(agreed.splits);
    const Request& r = p->request;
    if (r.type == OpType::kBarrier) {
      // Every rank has named it: the negotiation was the barrier.
      Finish({p});
      continue;
    }
    if (r.type == OpType::kAllreduce && !p->placeholder && TryEager(p)) {
      continue;
    }
    collective.push_back(p);
  }
  return RunCollectives(collective);
}

Status Engine::RunCollectives(const std::vector<Pending*>& collective) {
  std::vector<const Request*>& requests = planned_;
  requests.clear();
  for (Pending* p : collective) requests.push_back(&p->request);
  // A device backend that defers (several NCCL streams) gets every CUDA
  // group of the cycle queued before it is flushed, so they overlap; they
  // complete only after the flush.
  Backend* deferring = nullptr;
  std::vector<std::vector<Pending*>> queued;
  for (const FusionGroup& g :
       PlanFusion(requests, fusion_threshold_, options_.disable_group_fusion)) {
    std::vector<Pending*> group(
        collective.begin() + static_cast<std::ptrdiff_t>(g.begin),
        collective.begin() + static_cast<std::ptrdiff_t>(g.end));
    const int device = group.front()->request.device;
    if (device >= 0) {
      HVD_ASSIGN_OR_RETURN(Backend * backend,
                           backends_->Device(device, options_.rank));
      if (backend->Defers()) {
        // Queued, not finished: the time recorded is the queueing.
        HVD_ASSIGN_OR_RETURN(uint64_t bytes, RunMeasured(group));
        cycle_bytes_ += bytes;
        deferring = backend;
        queued.push_back(std::move(group));
        continue;
      }
    }
    HVD_RETURN_IF_ERROR(ExecuteFused(group));
  }
  if (deferring) {
    HVD_RETURN_IF_ERROR(deferring->Flush());
    for (const auto& group : queued) Finish(group);
  }
  return Status::Ok();
}

bool Engine::TryEager(Pending* p) {
  const Request& r = p->request;
  auto it = eager_.find(r.name);
  if (it == eager_.end()) return false;
  const size_t bytes = static_cast<size_t>(r.count) * DataTypeSize(r.dtype);
  for (std::string_view v : it->second) {
    if (v.data() == nullptr || v.size() != bytes) return false;
  }
  const auto start = std::chrono::steady_clock::now();
  cycle_bytes_ += executor_.ReduceEager(p, it->second);
  Metrics::Process().Collective(
      OpMetricName(r.type), "negotiation", 1, bytes,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count());
  Finish({p});
  return true;
}

StatusOr<uint64_t> Engine::RunMeasured(const std::vector<Pending*>& group) {
  const auto start = std::chrono::steady_clock::now();
  flight_.MarkEach(
      group, [](const Pending* p) { return p->flight; },
      FlightRecorder::Phase::kStarted, start);
  HVD_ASSIGN_OR_RETURN(uint64_t bytes, executor_.Run(group));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  uint64_t tensor_bytes = 0;
  for (const Pending* p : group) {
    tensor_bytes += static_cast<uint64_t>(p->request.count) *
                    DataTypeSize(p->request.dtype);
  }
  // The data path, as a label.
  const std::string& path = backends_->host_name();
  const char* transport = group.front()->request.device >= 0 ? "nccl"
                          : path.find("shared memory") != std::string::npos
                              ? "shm"
                          : path.find("local") != std::string::npos ? "local"
                                                                    : "gloo";
  Metrics& m = Metrics::Process();
  m.Collective(OpMetricName(group.front()->request.type), transport,
               static_cast<int>(group.size()), tensor_bytes, seconds);
  if (group.size() > 1) m.FusedGroup(tensor_bytes);
  return bytes;
}

void Engine::Finish(const std::vector<Pending*>& group) {
  // The cache first, while the requests are still held (only the cycle's
  // runner touches the cache; Remember takes mu_ when it evicts). None of
  // the group is pending by its bit any more before any is remembered, so
  // an eviction does not send one of them again.
  // An express group found its ids already: kept while the cache's
  // generation holds, they need no second lookup.
  auto id_of = [this](const Pending* p) -> std::optional<uint32_t> {
    if (!cache_enabled_) return std::nullopt;
    if (p->cache_id != UINT32_MAX &&
        p->cache_generation == cache_.generation()) {
      return p->cache_id;
    }
    return cache_.Lookup(p->request);
  };
  std::vector<std::optional<uint32_t>>& ids = finish_ids_;
  ids.clear();
  for (Pending* p : group) {
    ids.push_back(id_of(p));
    if (ids.back()) my_cached_.erase(*ids.back());
  }
  // A tensor the cache holds with the same metadata is only touched (what
  // Put would do, without finding it again), until an eviction may have
  // given its id to another.
  bool evicted = false;
  for (size_t i = 0; i < group.size(); ++i) {
    if (ids[i] && !evicted) {
      cache_.Touch(*ids[i]);
    } else {
      evicted |= Remember(group[i]->request);
    }
  }
  std::vector<std::shared_ptr<Completion>> done;
  done.reserve(group.size());
  std::vector<std::string> stand_ins;
  flight_.FinishedEach(
      group, [](const Pending* p) { return p->flight; },
      std::chrono::steady_clock::now(), true);
  {
    std::lock_guard<std::mutex> lock(mu_);
    int allreduces = 0;
    for (Pending* p : group) {
      if (p->placeholder) {
        stand_ins.push_back(p->request.name);
        continue;
      }
      done.push_back(std::move(p->done));
      allreduces += p->request.type == OpType::kAllreduce;
      EndPendingLocked(*p);
    }
    AllreducesDoneLocked(allreduces);
  }
  for (const std::string& name : stand_ins) placeholders_.erase(name);
  for (auto& d : done) d->Set(Status::Ok());
}

Status Engine::ExecuteFused(const std::vector<Pending*>& group) {
  // A failure is returned as it is: FailAll completes everyone.
  HVD_ASSIGN_OR_RETURN(uint64_t bytes, RunMeasured(group));
  cycle_bytes_ += bytes;
  Finish(group);
  return Status::Ok();
}

}  // namespace hvd::runtime
