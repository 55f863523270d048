#include "runtime/engine.h"

#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/logging.h"
#include "runtime/affinity.h"
#include "runtime/engine_message.h"
#include "runtime/response_cache.h"
#include "runtime/timeline.h"

namespace hvd::runtime {
namespace {

std::string Describe(const Request& r) {
  std::string op;
  switch (r.type) {
    case OpType::kAllreduce:
      op = std::string(r.average ? "average" : ReduceOpName(r.reduce)) +
           " allreduce";
      break;
    case OpType::kAllgather:
      op = "allgather";
      break;
    case OpType::kReducescatter:
      op = std::string(ReduceOpName(r.reduce)) + " reducescatter";
      break;
    case OpType::kAlltoall:
      op = "alltoall";
      break;
    case OpType::kBroadcast:
      op = "broadcast from root " + std::to_string(r.root);
      break;
    case OpType::kBarrier:
      return "a barrier";
    case OpType::kJoin:
      return "join";
  }
  std::string shape;
  for (int64_t d : r.shape)
    shape += (shape.empty() ? "" : "x") + std::to_string(d);
  return op + " of " + std::string(DataTypeName(r.dtype)) + " shape [" + shape +
         "]" +
         (r.device >= 0 ? " on CUDA device " + std::to_string(r.device) : "") +
         (r.prescale != 1.0 || r.postscale != 1.0
              ? " (prescale " + std::to_string(r.prescale) + ", postscale " +
                    std::to_string(r.postscale) + ")"
              : "");
}

bool SameShape(const Request& a, const Request& b) {
  if (a.type != b.type || a.dtype != b.dtype || a.device != b.device) {
    return false;
  }
  if (a.type == OpType::kBarrier) return true;
  // An allgather's first dimension, and an alltoall's splits, may differ
  // per rank; the other dimensions may not.
  if (a.type == OpType::kAllgather || a.type == OpType::kAlltoall) {
    return a.shape.size() == b.shape.size() &&
           std::equal(a.shape.begin() + 1, a.shape.end(), b.shape.begin() + 1);
  }
  return a.reduce == b.reduce && a.average == b.average && a.shape == b.shape &&
         a.prescale == b.prescale && a.postscale == b.postscale &&
         a.root == b.root;
}

}  // namespace

bool Completion::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

Status Completion::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return done_; });
  return status_;
}

void Completion::Set(Status s, int64_t value) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    done_ = true;
    status_ = std::move(s);
    value_ = value;
  }
  cv_.notify_all();
}

int64_t Completion::value() const {
  std::lock_guard<std::mutex> lock(mu_);
  return value_;
}

Engine::Engine(EngineOptions options, Backend* backend, ControlPlane* control)
    : options_(options),
      fusion_threshold_(options.fusion_threshold_bytes),
      cycle_time_(options.cycle_time),
      tuner_(options.autotune && options.rank == 0
                 ? std::make_unique<Autotuner>(
                       *options.autotune,
                       Knobs{options.fusion_threshold_bytes / 1048576.0,
                             options.cycle_time.count() / 1000.0,
                             options.cache_capacity > 0,
                             options.hierarchical_allreduce,
                             options.hierarchical_allgather, true})
                 : nullptr),
      cache_enabled_(options.cache_capacity > 0),
      backend_(backend),
      shm_backend_(backend),
      control_(control),
      cache_(options.cache_capacity),
      joined_(static_cast<size_t>(options.size), false),
      thread_([this] { Loop(); }) {}

Engine::~Engine() {
  Shutdown();
  WriteAutotuneLog();
}

Status Engine::Validate(const Request& request, void* data, Output* out) const {
  std::string who = "tensor '" + request.name + "'";
  if (request.name.empty()) {
    return Status::InvalidArgument("tensor name", "is empty");
  }
  if (request.type == OpType::kJoin || request.type == OpType::kBarrier) {
    return Status::Ok();
  }
  if (request.count < 0) {
    return Status::InvalidArgument(who, "has a negative element count");
  }
  if (!request.shape.empty()) {
    int64_t n = 1;
    for (int64_t d : request.shape) {
      if (d < 0)
        return Status::InvalidArgument(who, "has a negative dimension");
      n *= d;
    }
    if (n != request.count) {
      return Status::InvalidArgument(
          who, "has a shape of " + std::to_string(n) + " elements but " +
                   std::to_string(request.count) + " were given");
    }
  }
  if (request.count > 0 && data == nullptr) {
    return Status::InvalidArgument(who, "has no data");
  }
  const bool outputs = request.type == OpType::kAllgather ||
                       request.type == OpType::kReducescatter ||
                       request.type == OpType::kAlltoall;
  if (outputs && out == nullptr) {
    return Status::InvalidArgument(who, "needs an output");
  }
  if (request.device >= 0) {
    if (!options_.make_device_backend) {
      return Status::InvalidArgument(
          who, "is on CUDA device " + std::to_string(request.device) +
                   " but this libhvd was built without NCCL (rebuild where "
                   "CUDA and NCCL are installed, or pass a host tensor)");
    }
    if (request.device >= options_.cuda_devices) {
      return Status::InvalidArgument(
          who, "is on CUDA device " + std::to_string(request.device) +
                   " but this process sees " +
                   std::to_string(options_.cuda_devices) +
                   " (check CUDA_VISIBLE_DEVICES and the driver)");
    }
    if (request.type != OpType::kAllreduce &&
        request.type != OpType::kBroadcast) {
      return Status::InvalidArgument(
          who, std::string("is a CUDA tensor; ") + OpTypeName(request.type) +
                   " takes host tensors only (copy it to the host)");
    }
    if ((request.prescale != 1.0 || request.postscale != 1.0) &&
        request.reduce != ReduceOp::kSum) {
      return Status::InvalidArgument(
          who, "on CUDA takes scale factors with Sum and Average only");
    }
  }
  if (request.type == OpType::kAlltoall) {
    int64_t rows = request.shape.empty() ? request.count : request.shape[0];
    int64_t sum = 0;
    for (int64_t v : request.splits) sum += v < 0 ? -(1LL << 62) : v;
    if (static_cast<int>(request.splits.size()) != options_.size ||
        sum != rows) {
      return Status::InvalidArgument(
          who, "alltoall splits must give one count per rank (" +
                   std::to_string(options_.size) + ") adding up to the " +
                   std::to_string(rows) + " rows");
    }
  }
  if (request.type == OpType::kBroadcast &&
      (request.root < 0 || request.root >= options_.size)) {
    return Status::InvalidArgument(
        who, "broadcast root " + std::to_string(request.root) +
                 " is not a rank of a job of " + std::to_string(options_.size));
  }
  return Status::Ok();
}

void Engine::AddLocked(Request request, void* data, Output* out,
                       const std::shared_ptr<Completion>& done,
                       Status& refuse) {
  std::string who = "tensor '" + request.name + "'";
  if (refuse.ok() && !failed_.ok()) refuse = failed_;
  if (refuse.ok() && stop_) {
    refuse = Status::FailedPrecondition(who, "the engine has shut down");
  }
  if (refuse.ok() && pending_.count(request.name)) {
    refuse = Status::InvalidArgument(
        who, "is already in flight on rank " + std::to_string(options_.rank) +
                 "; wait for it before submitting the name again");
  }
  if (!refuse.ok()) return;
  if (request.shape.empty() && request.type != OpType::kJoin &&
      request.type != OpType::kBarrier) {
    request.shape = {request.count};
  }
  fresh_.push_back(request);
  std::string name = request.name;
  Pending p;
  p.request = std::move(request);
  p.data = data;
  p.out = out;
  p.done = done;
  pending_.emplace(name, std::move(p));
}

std::shared_ptr<Completion> Engine::Enqueue(Request request, void* data,
                                            Output* out) {
  auto done = std::make_shared<Completion>();
  Status refuse = Validate(request, data, out);
  {
    std::lock_guard<std::mutex> lock(mu_);
    AddLocked(std::move(request), data, out, done, refuse);
  }
  if (!refuse.ok()) {
    done->Set(refuse);
  } else {
    control_->Notify();
  }
  return done;
}

std::vector<std::shared_ptr<Completion>> Engine::EnqueueGroup(
    std::vector<std::pair<Request, void*>> requests) {
  std::vector<std::shared_ptr<Completion>> done;
  std::vector<Status> refuse;
  for (auto& [r, data] : requests) {
    done.push_back(std::make_shared<Completion>());
    refuse.push_back(Validate(r, data, nullptr));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < requests.size(); ++i) {
      AddLocked(std::move(requests[i].first), requests[i].second, nullptr,
                done[i], refuse[i]);
    }
  }
  for (size_t i = 0; i < done.size(); ++i) {
    if (!refuse[i].ok()) done[i]->Set(refuse[i]);
  }
  control_->Notify();
  return done;
}

void Engine::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  control_->Notify();
  if (thread_.joinable()) thread_.join();
}

void Engine::FailAll(const Status& s) {
  std::map<std::string, Pending> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_.ok()) failed_ = s;
    pending.swap(pending_);
    fresh_.clear();
  }
  for (auto& [name, p] : pending) p.done->Set(s);
}

void Engine::Loop() {
  // Named, so tools (top -H, the tests) can tell it from the others.
  pthread_setname_np(pthread_self(), "hvd-engine");
  if (options_.thread_cpu >= 0) {
    if (Status s = BindThread(options_.thread_cpu); !s.ok()) {
      HVD_LOG(Warning) << s.ToString();
    }
  }
  for (;;) {
    uint8_t stop;
    bool go;
    {
      std::lock_guard<std::mutex> lock(mu_);
      go = stop_ || !fresh_.empty();
    }
    bool peer = false;
    if (!go) {
      // Sleep until something is new here or a peer starts a cycle; wake
      // every 100 ms for the stall inspector (whose times are seconds).
      control_->Wait(std::chrono::milliseconds(100), &peer);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      go = stop_ || !fresh_.empty() || peer;
      stop = stop_ ? kShutdown : kRunning;
    }
    if (stop == kRunning && options_.rank == 0 && InspectStalls()) {
      stop = kStalled;
      go = true;
    }
    if (!go) continue;
    if (cycle_time_.count() > 0 && stop == kRunning) Pace();
    uint8_t everyone = kRunning;
    Status s = RunCycle(stop, &everyone);
    if (!s.ok()) {
      FailAll(s);
      return;
    }
    if (everyone != kRunning) {
      FailAll(
          everyone == kStalled
              ? Status::Aborted(
                    "rank " + std::to_string(options_.rank),
                    "the job was stopped by the stall inspector after " +
                        std::to_string(options_.stall_shutdown.count() / 1000) +
                        " s: " +
                        [&] {
                          bool unused = false;
                          return StallReport(std::chrono::steady_clock::now(),
                                             &unused);
                        }() +
                        " (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS)")
              : Status::Aborted("rank " + std::to_string(options_.rank),
                                "the job is shutting down (a rank called "
                                "hvd::shutdown())"));
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      return;
    }
  }
}

bool Engine::Complete(const std::vector<int>& ranks) const {
  std::vector<bool> has = joined_;
  for (int r : ranks) has[r] = true;
  return std::all_of(has.begin(), has.end(), [](bool b) { return b; });
}

std::string Engine::BuildMessage(uint8_t stop,
                                 const std::vector<Request>& uncached) {
  std::string msg;
  PutValue<uint8_t>(msg, stop);
  std::string bits;
  for (uint32_t id : my_cached_) {
    if (bits.size() <= id / 8) bits.resize(id / 8 + 1, '\0');
    bits[id / 8] |= static_cast<char>(1 << (id % 8));
  }
  PutBytes(msg, bits);
  PutBytes(msg, Encode(0, uncached));
  // The data of small pending allreduces: when every rank sends a tensor's
  // data in the same cycle, nobody needs a collective for it.
  std::string eager;
  uint32_t neager = 0;
  if (options_.size > 1 && options_.eager_cycle_bytes > 0) {
    size_t budget = options_.eager_cycle_bytes;
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, p] : pending_) {
      const Request& r = p.request;
      if (r.type != OpType::kAllreduce || r.device >= 0) continue;
      size_t bytes = static_cast<size_t>(r.count) * DataTypeSize(r.dtype);
      if (bytes > options_.eager_tensor_bytes || bytes > budget) continue;
      budget -= bytes;
      PutBytes(eager, name);
      PutBytes(eager,
               std::string_view(static_cast<const char*>(p.data), bytes));
      ++neager;
    }
  }
  PutValue<uint32_t>(msg, neager);
  msg += eager;
  // Rank 0's autotuned values, which every rank applies after this cycle.
  PutKnobs(msg, outgoing_knobs_);
  outgoing_knobs_.reset();
  return msg;
}

Status Engine::RunCycle(uint8_t stop, uint8_t* everyone_stop) {
  std::vector<Request> mine;
  {
    std::lock_guard<std::mutex> lock(mu_);
    mine.swap(fresh_);
  }
  // Requests the cache knows (same name and metadata as a completed one)
  // only set their bit; the rest travel in full.
  std::vector<Request> uncached;
  for (Request& r : mine) {
    std::optional<uint32_t> id;
    if (cache_enabled_ &&
        (r.type == OpType::kAllreduce || r.type == OpType::kBroadcast ||
         r.type == OpType::kReducescatter)) {
      id = cache_.Lookup(r);
    }
    if (id) {
      my_cached_.insert(*id);
    } else {
      uncached.push_back(std::move(r));
    }
  }
  const size_t n = static_cast<size_t>(options_.size);
  std::vector<std::string>& all = cycle_messages_;
  bool urgent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    urgent = !pending_.empty();
  }
  HVD_RETURN_IF_ERROR(
      control_->Exchange(BuildMessage(stop, uncached), &all, urgent));
  std::vector<CycleMessage> msgs(n);
  for (size_t r = 0; r < n; ++r) {
    if (!ParseCycleMessage(all[r], &msgs[r]) || msgs[r].stop > 2) {
      return Status::DataLoss(
          "negotiation", "malformed message from rank " + std::to_string(r));
    }
    if (msgs[r].stop > *everyone_stop) *everyone_stop = msgs[r].stop;
  }
  std::vector<std::vector<Request>> reqs(n);
  bool joins = false;
  for (size_t r = 0; r < n; ++r) {
    uint8_t unused = 0;
    HVD_ASSIGN_OR_RETURN(reqs[r], Decode(msgs[r].requests, &unused));
    for (const Request& q : reqs[r]) {
      if (q.type == OpType::kJoin && !joined_[r]) {
        joined_[r] = true;
        last_joined_ = static_cast<int>(r);
        joins = true;
      }
    }
  }
  eager_.clear();
  for (size_t r = 0; r < n; ++r) {
    for (const auto& [name, data] : msgs[r].eager) {
      auto& v = eager_[std::string(name)];
      v.resize(n);
      v[r] = data;
    }
  }

  std::vector<std::pair<std::string, Request>> ready;
  auto now = std::chrono::steady_clock::now();
  Timeline* tl = options_.timeline;
  // Cached tensors: ready when every rank set the bit (or joined). Only
  // the ids some rank named are visited (the OR of the bit vectors, a
  // byte at a time): walking the whole capacity cost microseconds a cycle.
  const uint32_t capacity = static_cast<uint32_t>(cache_.capacity());
  std::vector<uint32_t> named;
  size_t longest = 0;
  for (size_t r = 0; r < n; ++r) {
    longest = std::max(longest, msgs[r].bits.size());
  }
  for (size_t byte = 0; byte < longest; ++byte) {
    unsigned any = 0;
    for (size_t r = 0; r < n; ++r) {
      if (byte < msgs[r].bits.size()) {
        any |= static_cast<uint8_t>(msgs[r].bits[byte]);
      }
    }
    for (; any; any &= any - 1) {
      named.push_back(static_cast<uint32_t>(byte * 8) +
                      static_cast<uint32_t>(__builtin_ctz(any)));
    }
  }
  // Nobody names these any more: no stall to watch.
  for (auto it = cached_since_.begin(); it != cached_since_.end();) {
    bool someone = false;
    for (size_t r = 0; r < n && !someone; ++r) {
      someone = Bit(msgs[r].bits, it->first);
    }
    it = someone ? std::next(it) : cached_since_.erase(it);
  }
  for (uint32_t id : named) {
    bool complete = true;
    for (size_t r = 0; r < n; ++r) {
      complete &= Bit(msgs[r].bits, id) || joined_[r];
    }
    if (id >= capacity || !cache_.Has(id)) {
      return Status::DataLoss("negotiation",
                              "a peer named an unknown cached tensor");
    }
    const Request& meta = cache_.Get(id);
    if (complete) {
      ready.emplace_back(meta.name, meta);
      if (tl) {
        tl->NegotiateStart(meta.name, OpTypeName(meta.type));
        tl->NegotiateEnd(meta.name);
      }
      cached_since_.erase(id);
    } else {
      cached_since_.emplace(id, now);  // for the stall inspector
      auto& ranks = cached_ranks_[id];
      ranks.assign(n, false);
      for (size_t r = 0; r < n; ++r) ranks[r] = Bit(msgs[r].bits, id);
    }
  }

  // Requests in full, in rank order.
  for (size_t r = 0; r < n; ++r) {
    for (Request& req : reqs[r]) {
      if (req.type == OpType::kJoin) continue;
      // A full request for a cached name means some rank changed its
      // metadata: every rank drops the entry (they all see this message),
      // and one that had it pending through the cache sends it in full.
      if (std::optional<uint32_t> stale = cache_.Erase(req.name)) {
        cached_since_.erase(*stale);
        if (my_cached_.erase(*stale)) {
          std::lock_guard<std::mutex> lock(mu_);
          auto it = pending_.find(req.name);
          if (it != pending_.end()) fresh_.push_back(it->second.request);
        }
      }
      Seen& s = seen_[req.name];
      if (tl && s.ranks.empty()) {
        tl->NegotiateStart(req.name, OpTypeName(req.type));
      }
      if (tl) tl->NegotiateRankReady(req.name, static_cast<int>(r));
      if (s.ranks.empty()) {
        s.first = req;
        s.first_rank = static_cast<int>(r);
        s.since = now;
      } else if (s.mismatch.empty() && !SameShape(s.first, req)) {
        // Lower rank first, so the same mistake reads the same on every
        // run, whichever rank's request happened to arrive first.
        std::pair<int, const Request*> low{s.first_rank, &s.first},
            high{static_cast<int>(r), &req};
        if (high.first < low.first) std::swap(low, high);
        s.mismatch = "rank " + std::to_string(low.first) + " asks for " +
                     Describe(*low.second) + " but rank " +
                     std::to_string(high.first) + " for " +
                     Describe(*high.second);
      }
      s.ranks.push_back(static_cast<int>(r));
      if (s.counts.empty()) s.counts.assign(n, 0);
      s.counts[r] = req.shape.empty() ? req.count : req.shape[0];
      if (req.type == OpType::kAlltoall) {
        if (s.splits.empty()) s.splits.assign(n, {});
        if (req.splits.size() != n) {
          s.mismatch = "rank " + std::to_string(r) + " gives " +
                       std::to_string(req.splits.size()) +
                       " alltoall splits for " + std::to_string(n) + " ranks";
        } else {
          s.splits[r] = req.splits;
        }
      }
      if (Complete(s.ranks)) {
        ready.emplace_back(req.name, s.first);
        if (tl) tl->NegotiateEnd(req.name);
      }
    }
  }
  // A join can complete tensors the joined rank never named.
  if (joins) {
    for (const auto& [name, s] : seen_) {
      bool listed = std::any_of(ready.begin(), ready.end(),
                                [&](const auto& e) { return e.first == name; });
      if (!listed && !s.ranks.empty() && Complete(s.ranks)) {
        ready.emplace_back(name, s.first);
        if (tl) tl->NegotiateEnd(name);
      }
    }
  }
  if (tl && tl->mark_cycles() && !ready.empty()) tl->MarkCycle();
  cycle_bytes_ = 0;
  HVD_RETURN_IF_ERROR(Execute(ready));
  if (msgs[0].knobs) HVD_RETURN_IF_ERROR(ApplyKnobs(*msgs[0].knobs));
  if (tuner_) TuneAfterCycle();
  if (std::all_of(joined_.begin(), joined_.end(), [](bool b) { return b; })) {
    // Everyone has joined: every rank's join completes, and the job may go
    // on (or join again).
    std::shared_ptr<Completion> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pending_.find(kJoinName);
      if (it != pending_.end()) {
        done = it->second.done;
        pending_.erase(it);
      }
    }
    if (done) done->Set(Status::Ok(), last_joined_);
    joined_.assign(n, false);
  }
  return Status::Ok();
}

}  // namespace hvd::runtime
