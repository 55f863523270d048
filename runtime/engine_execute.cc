// The engine's execution half: fusing the tensors every rank agreed on,
// running them on the backend, and completing their handles (see the
// protocol in engine.h). Runs on the engine thread only.
#include <algorithm>
#include <cstring>

#include "runtime/engine.h"
#include "runtime/engine/fusion.h"
#include "runtime/response_cache.h"
#include "runtime/timeline.h"

namespace hvd::runtime {
namespace {

int64_t Rows(const Request& r) {
  return r.shape.empty() ? r.count : r.shape[0];
}

int64_t RowElems(const Request& r) {
  int64_t n = 1;
  for (size_t i = 1; i < r.shape.size(); ++i) n *= r.shape[i];
  return n;
}

// The shape of `r` with a first dimension of `rows`.
std::vector<int64_t> WithRows(const Request& r, int64_t rows) {
  std::vector<int64_t> shape =
      r.shape.empty() ? std::vector<int64_t>{0} : r.shape;
  shape[0] = rows;
  return shape;
}

}  // namespace

template <typename F>
Status Engine::Traced(const std::vector<Pending*>& group, bool fused, F&& run) {
  Timeline* tl = options_.timeline;
  if (!tl) return run([](const char*) {}, [] {});
  for (Pending* p : group)
    tl->Start(p->request.name, OpTypeName(p->request.type));
  (void)fused;
  Status s = run(
      [&](const char* activity) {
        for (Pending* p : group) tl->ActivityStart(p->request.name, activity);
      },
      [&] {
        for (Pending* p : group) tl->ActivityEnd(p->request.name);
      });
  for (Pending* p : group) tl->End(p->request.name);
  return s;
}

void Engine::Remember(const Request& r) {
  if (!cache_enabled_) return;
  // Counts (and splits) differ per rank: a bit cannot stand for them.
  if (r.type != OpType::kAllreduce && r.type != OpType::kBroadcast &&
      r.type != OpType::kReducescatter) {
    return;
  }
  std::optional<ResponseCache::Evicted> evicted = cache_.Put(r);
  if (!evicted) return;
  negotiator_.ForgetCached(evicted->id);
  // Every rank evicts the same entry at the same point. If this rank had
  // that tensor pending through the cache, it is sent again in full.
  if (my_cached_.erase(evicted->id)) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(evicted->name);
    if (it != pending_.end()) fresh_.push_back(it->second.request);
  }
}

Status Engine::Execute(std::vector<Agreed>& ready) {
  const std::vector<bool>& joined = negotiator_.joined();
  const bool any_joined =
      std::any_of(joined.begin(), joined.end(), [](bool b) { return b; });
  // What needs no collective completes here and now (every rank decides
  // alike); the rest runs below, in order, as the fusion planner groups it.
  std::vector<Pending*> collective;
  for (Agreed& agreed : ready) {
    const std::string& name = agreed.name;
    const Request& meta = agreed.meta;
    Pending* p = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pending_.find(name);
      if (it != pending_.end()) p = &it->second;
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
    if (!mismatch.empty()) {
      Status err = Status::InvalidArgument("tensor '" + name + "'", mismatch);
      std::shared_ptr<Completion> done = p->done;
      {
        std::lock_guard<std::mutex> lock(mu_);
        pending_.erase(name);
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
  std::vector<const Request*> requests;
  requests.reserve(collective.size());
  for (Pending* p : collective) requests.push_back(&p->request);
  for (const FusionGroup& g : PlanFusion(requests, fusion_threshold_)) {
    HVD_RETURN_IF_ERROR(ExecuteFused(std::vector<Pending*>(
        collective.begin() + static_cast<std::ptrdiff_t>(g.begin),
        collective.begin() + static_cast<std::ptrdiff_t>(g.end))));
  }
  return Status::Ok();
}

bool Engine::TryEager(Pending* p) {
  const Request& r = p->request;
  auto it = eager_.find(r.name);
  if (it == eager_.end()) return false;
  const size_t esize = DataTypeSize(r.dtype);
  const size_t bytes = static_cast<size_t>(r.count) * esize;
  for (std::string_view v : it->second) {
    if (v.data() == nullptr || v.size() != bytes) return false;
  }
  (void)Traced({p}, false, [&](auto begin, auto end) -> Status {
    // Every rank adds the same contributions in the same (rank) order, so
    // every rank ends with the same bits.
    begin("LOCAL_REDUCE");
    std::vector<uint8_t> acc(it->second[0].begin(), it->second[0].end());
    if (r.prescale != 1.0)
      ScaleBuffer(r.dtype, acc.data(), r.count, r.prescale);
    std::vector<uint8_t> next;
    for (size_t q = 1; q < it->second.size(); ++q) {
      next.assign(it->second[q].begin(), it->second[q].end());
      if (r.prescale != 1.0) {
        ScaleBuffer(r.dtype, next.data(), r.count, r.prescale);
      }
      ReduceBuffers(r.dtype, r.reduce, acc.data(), acc.data(), next.data(),
                    r.count);
    }
    double post = r.postscale * (r.average ? 1.0 / options_.size : 1.0);
    if (post != 1.0) ScaleBuffer(r.dtype, acc.data(), r.count, post);
    if (bytes) std::memcpy(p->data, acc.data(), bytes);
    end();
    return Status::Ok();
  });
  cycle_bytes_ += bytes;
  Finish({p});
  return true;
}

void Engine::Finish(const std::vector<Pending*>& group) {
  std::vector<std::shared_ptr<Completion>> done;
  std::vector<Request> completed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Pending* p : group) {
      completed.push_back(p->request);
      if (p->placeholder) continue;
      done.push_back(p->done);
      pending_.erase(p->request.name);
    }
  }
  for (const Request& r : completed) {
    if (auto id = cache_enabled_ ? cache_.Lookup(r) : std::nullopt) {
      my_cached_.erase(*id);
    }
    Remember(r);
    placeholders_.erase(r.name);
  }
  for (auto& d : done) d->Set(Status::Ok());
}

Status Engine::ExecuteFused(const std::vector<Pending*>& group) {
  const Request& r0 = group.front()->request;
  const size_t esize = DataTypeSize(r0.dtype);
  const bool fused = group.size() > 1;
  Backend* backend = &backends_->host();
  const char* prefix = "GLOO_";
  if (r0.device >= 0) {
    HVD_ASSIGN_OR_RETURN(backend, backends_->Device(r0.device, options_.rank));
    prefix = "NCCL_";
  }
  auto activity = [&](const char* op) { return std::string(prefix) + op; };
  Status status = Traced(group, fused, [&](auto begin, auto end) -> Status {
    Pending* p = group.front();
    if (r0.type == OpType::kAllgather) {
      // counts: every rank's first dimension.
      const int64_t row = RowElems(r0);
      std::vector<size_t> bytes;
      size_t total = 0;
      int64_t rows = 0;
      for (int64_t c : p->counts) {
        bytes.push_back(static_cast<size_t>(c * row) * esize);
        total += bytes.back();
        rows += c;
      }
      p->out->data.resize(total);
      p->out->shape = WithRows(r0, rows);
      begin(activity("ALLGATHER").c_str());
      Status s = backend->Allgatherv(p->data, p->out->data.data(), bytes);
      end();
      return s;
    }
    if (r0.type == OpType::kReducescatter) {
      const int64_t n = options_.size;
      const int64_t rows = Rows(r0), row = RowElems(r0);
      std::vector<size_t> counts(n);
      for (int64_t r = 0; r < n; ++r) {
        counts[r] =
            static_cast<size_t>((rows / n + (r < rows % n ? 1 : 0)) * row);
      }
      p->out->data.resize(counts[options_.rank] * esize);
      p->out->shape = WithRows(r0, rows / n + (options_.rank < rows % n));
      std::vector<uint8_t> scaled;
      const void* in = p->data;
      if (r0.prescale != 1.0) {
        scaled.assign(static_cast<const uint8_t*>(p->data),
                      static_cast<const uint8_t*>(p->data) + r0.count * esize);
        ScaleBuffer(r0.dtype, scaled.data(), r0.count, r0.prescale);
        in = scaled.data();
      }
      begin(activity("REDUCESCATTER").c_str());
      Status s = backend->Reducescatter(in, p->out->data.data(), counts,
                                        r0.dtype, r0.reduce);
      end();
      double post = r0.postscale * (r0.average ? 1.0 / n : 1.0);
      if (s.ok() && post != 1.0) {
        ScaleBuffer(r0.dtype, p->out->data.data(), counts[options_.rank], post);
      }
      return s;
    }
    if (r0.type == OpType::kAlltoall) {
      // Every rank's splits travelled in the negotiation: what rank q sends
      // here is splits_q[me] rows.
      const int64_t row = RowElems(r0);
      std::vector<size_t> send, recv;
      size_t total = 0;
      int64_t rows = 0;
      for (int64_t v : r0.splits) {
        send.push_back(static_cast<size_t>(v * row) * esize);
      }
      for (const auto& sp : p->all_splits) {
        recv.push_back(static_cast<size_t>(sp[options_.rank] * row) * esize);
        total += recv.back();
        rows += sp[options_.rank];
      }
      p->out->data.resize(total);
      p->out->shape = WithRows(r0, rows);
      begin(activity("ALLTOALL").c_str());
      Status s = backend->Alltoallv(p->data, send, p->out->data.data(), recv);
      end();
      return s;
    }
    if (r0.type == OpType::kBroadcast) {
      begin(activity("BROADCAST").c_str());
      Status s = backend->Broadcast(
          p->data, static_cast<size_t>(r0.count) * esize, r0.root);
      end();
      return s;
    }
    double post = r0.postscale * (r0.average ? 1.0 / options_.size : 1.0);
    size_t total = 0;
    for (Pending* q : group) total += static_cast<size_t>(q->request.count);
    if (r0.device >= 0) {
      // Device memory: the backend scales (Sum only, checked at enqueue).
      begin(activity("ALLREDUCE").c_str());
      Status s = r0.prescale * post == 1.0
                     ? backend->Allreduce(p->data, total, r0.dtype, r0.reduce)
                     : backend->ScaledSum(p->data, total, r0.dtype,
                                          r0.prescale * post);
      end();
      return s;
    }
    void* buffer = p->data;
    if (fused) {
      // Fuse: pack every tensor into one buffer, one call, unpack.
      begin("MEMCPY_IN_FUSION_BUFFER");
      fusion_.resize(total * esize);
      size_t at = 0;
      for (Pending* q : group) {
        size_t b = static_cast<size_t>(q->request.count) * esize;
        if (b) std::memcpy(fusion_.data() + at, q->data, b);
        at += b;
      }
      buffer = fusion_.data();
      end();
    }
    if (r0.prescale != 1.0) ScaleBuffer(r0.dtype, buffer, total, r0.prescale);
    begin(activity("ALLREDUCE").c_str());
    Status s =
        backend->AllreduceScaled(buffer, total, r0.dtype, r0.reduce, post);
    end();
    if (!s.ok()) return s;
    if (fused) {
      begin("MEMCPY_OUT_FUSION_BUFFER");
      size_t at = 0;
      for (Pending* q : group) {
        size_t b = static_cast<size_t>(q->request.count) * esize;
        if (b) std::memcpy(q->data, fusion_.data() + at, b);
        at += b;
      }
      end();
    }
    return Status::Ok();
  });
  if (!status.ok()) return status;  // FailAll completes everyone
  if (r0.type == OpType::kAllreduce) {
    for (Pending* p : group) {
      cycle_bytes_ += static_cast<uint64_t>(p->request.count) * esize;
    }
  }
  Finish(group);
  return Status::Ok();
}

}  // namespace hvd::runtime
