// The engine's execution half: fusing the tensors every rank agreed on,
// running them on the backend, and completing their handles (see the
// protocol in engine.h). Runs on the engine thread only.
#include <cstring>

#include "runtime/engine.h"
#include "runtime/response_cache.h"
#include "runtime/timeline.h"

namespace hvd::runtime {
namespace {

bool Fusable(const Request& a, const Request& b) {
  return a.type == OpType::kAllreduce && b.type == OpType::kAllreduce &&
         a.dtype == b.dtype && a.reduce == b.reduce && a.average == b.average &&
         a.prescale == b.prescale && a.postscale == b.postscale;
}

}  // namespace

void Engine::Remember(const Request& r) {
  // Counts (and splits) differ per rank: a bit cannot stand for them.
  if (r.type == OpType::kAllgather || r.type == OpType::kAlltoall) return;
  std::optional<ResponseCache::Evicted> evicted = cache_.Put(r);
  if (!evicted) return;
  cached_since_.erase(evicted->id);
  // Every rank evicts the same entry at the same point. If this rank had
  // that tensor pending through the cache, it is sent again in full.
  if (my_cached_.erase(evicted->id)) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(evicted->name);
    if (it != pending_.end()) fresh_.push_back(it->second.request);
  }
}

Status Engine::Execute(const std::vector<std::string>& ready) {
  std::vector<Pending*> group;
  size_t group_bytes = 0;
  auto flush = [&]() -> Status {
    if (group.empty()) return Status::Ok();
    Status s = ExecuteFused(group);
    group.clear();
    group_bytes = 0;
    return s;
  };
  for (const std::string& name : ready) {
    Seen seen = std::move(seen_[name]);
    seen_.erase(name);
    Pending* p;
    {
      std::lock_guard<std::mutex> lock(mu_);
      p = &pending_.at(name);
    }
    if (!seen.mismatch.empty()) {
      HVD_RETURN_IF_ERROR(flush());
      Status err =
          Status::InvalidArgument("tensor '" + name + "'", seen.mismatch);
      std::shared_ptr<Completion> done = p->done;
      {
        std::lock_guard<std::mutex> lock(mu_);
        pending_.erase(name);
      }
      done->Set(err);
      continue;
    }
    p->counts = seen.counts;
    p->all_splits = seen.splits;
    const Request& r = p->request;
    size_t nbytes = static_cast<size_t>(r.count) * DataTypeSize(r.dtype);
    bool fits = group.empty() ||
                (Fusable(group.back()->request, r) &&
                 group_bytes + nbytes <= options_.fusion_threshold_bytes);
    if (!fits) HVD_RETURN_IF_ERROR(flush());
    group.push_back(p);
    group_bytes += nbytes;
    if (r.type != OpType::kAllreduce) HVD_RETURN_IF_ERROR(flush());
  }
  return flush();
}

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

Status Engine::ExecuteFused(const std::vector<Pending*>& group) {
  const Request& r0 = group.front()->request;
  const size_t esize = DataTypeSize(r0.dtype);
  const bool fused = group.size() > 1;
  Status status = Traced(group, fused, [&](auto begin, auto end) -> Status {
    if (r0.type == OpType::kAllgather) {
      Pending* p = group.front();
      std::vector<size_t> bytes;
      size_t total = 0;
      for (int64_t c : p->counts) {
        bytes.push_back(static_cast<size_t>(c) * esize);
        total += bytes.back();
      }
      p->gathered->resize(total);
      begin("GLOO_ALLGATHER");
      Status s = backend_->Allgatherv(p->data, p->gathered->data(), bytes);
      end();
      return s;
    }
    if (r0.type == OpType::kReducescatter) {
      Pending* p = group.front();
      const int64_t n = options_.size;
      std::vector<size_t> counts(n);
      for (int64_t r = 0; r < n; ++r) {
        counts[r] =
            static_cast<size_t>(r0.count / n + (r < r0.count % n ? 1 : 0));
      }
      p->gathered->resize(counts[options_.rank] * esize);
      begin("GLOO_REDUCESCATTER");
      Status s = backend_->Reducescatter(p->data, p->gathered->data(), counts,
                                         r0.dtype, r0.reduce);
      end();
      if (s.ok() && r0.average) {
        ScaleBuffer(r0.dtype, p->gathered->data(), counts[options_.rank],
                    1.0 / options_.size);
      }
      return s;
    }
    if (r0.type == OpType::kAlltoall) {
      // Every rank's splits travelled in the negotiation: what rank q sends
      // here is splits_q[me].
      Pending* p = group.front();
      std::vector<size_t> send, recv;
      size_t total = 0;
      for (int64_t v : r0.splits)
        send.push_back(static_cast<size_t>(v) * esize);
      for (const auto& sp : p->all_splits) {
        recv.push_back(static_cast<size_t>(sp[options_.rank]) * esize);
        total += recv.back();
      }
      p->gathered->resize(total);
      begin("GLOO_ALLTOALL");
      Status s = backend_->Alltoallv(p->data, send, p->gathered->data(), recv);
      end();
      return s;
    }
    if (r0.type == OpType::kBroadcast) {
      begin("GLOO_BROADCAST");
      Status s = backend_->Broadcast(
          group.front()->data, static_cast<size_t>(r0.count) * esize, r0.root);
      end();
      return s;
    }
    double post = r0.postscale * (r0.average ? 1.0 / options_.size : 1.0);
    size_t total = 0;
    for (Pending* p : group) total += static_cast<size_t>(p->request.count);
    void* buffer = group.front()->data;
    if (fused) {
      // Fuse: pack every tensor into one buffer, one call, unpack.
      begin("MEMCPY_IN_FUSION_BUFFER");
      fusion_.resize(total * esize);
      size_t at = 0;
      for (Pending* p : group) {
        size_t b = static_cast<size_t>(p->request.count) * esize;
        if (b) std::memcpy(fusion_.data() + at, p->data, b);
        at += b;
      }
      buffer = fusion_.data();
      end();
    }
    if (r0.prescale != 1.0) ScaleBuffer(r0.dtype, buffer, total, r0.prescale);
    begin("GLOO_ALLREDUCE");
    Status s = backend_->Allreduce(buffer, total, r0.dtype, r0.reduce);
    end();
    if (!s.ok()) return s;
    if (post != 1.0) ScaleBuffer(r0.dtype, buffer, total, post);
    if (fused) {
      begin("MEMCPY_OUT_FUSION_BUFFER");
      size_t at = 0;
      for (Pending* p : group) {
        size_t b = static_cast<size_t>(p->request.count) * esize;
        if (b) std::memcpy(p->data, fusion_.data() + at, b);
        at += b;
      }
      end();
    }
    return Status::Ok();
  });
  if (!status.ok()) return status;  // FailAll completes everyone
  std::vector<std::shared_ptr<Completion>> done;
  std::vector<Request> completed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Pending* p : group) {
      done.push_back(p->done);
      completed.push_back(p->request);
      pending_.erase(p->request.name);
    }
  }
  for (const Request& r : completed) {
    if (auto id = cache_.Lookup(r)) my_cached_.erase(*id);
    Remember(r);
  }
  for (auto& d : done) d->Set(Status::Ok());
  return Status::Ok();
}

}  // namespace hvd::runtime
