#include "runtime/engine.h"

#include <algorithm>
#include <cstring>

#include "common/logging.h"
#include "runtime/response_cache.h"
#include "runtime/timeline.h"

namespace hvd::runtime {
namespace {

void Put(std::string& out, const void* p, size_t n) {
  out.append(static_cast<const char*>(p), n);
}

template <typename T>
void PutValue(std::string& out, T v) {
  Put(out, &v, sizeof(v));
}

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  template <typename T>
  bool Get(T* v) {
    if (pos_ + sizeof(T) > s_.size()) return false;
    std::memcpy(v, s_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* v, size_t n) {
    if (pos_ + n > s_.size()) return false;
    v->assign(s_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool AtEnd() const { return pos_ == s_.size(); }

 private:
  const std::string& s_;
  size_t pos_ = 0;
};

// How long a burst of submissions must pause before a cycle starts early.
constexpr auto kQuiet = std::chrono::microseconds(100);

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
  }
  return op + " of " + std::to_string(r.count) + " " +
         std::string(DataTypeName(r.dtype)) + " elements" +
         (r.prescale != 1.0 || r.postscale != 1.0
              ? " (prescale " + std::to_string(r.prescale) + ", postscale " +
                    std::to_string(r.postscale) + ")"
              : "");
}

bool SameShape(const Request& a, const Request& b) {
  // An allgather's first dimension, and an alltoall's splits, may differ
  // per rank.
  if (a.type == b.type &&
      (a.type == OpType::kAllgather || a.type == OpType::kAlltoall)) {
    return a.dtype == b.dtype;
  }
  return a.type == b.type && a.dtype == b.dtype && a.reduce == b.reduce &&
         a.average == b.average && a.count == b.count &&
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

void Completion::Set(Status s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    done_ = true;
    status_ = std::move(s);
  }
  cv_.notify_all();
}

std::string Engine::Encode(uint8_t stop, const std::vector<Request>& reqs) {
  std::string out;
  PutValue<uint8_t>(out, stop);
  PutValue<uint32_t>(out, static_cast<uint32_t>(reqs.size()));
  for (const Request& r : reqs) {
    PutValue<uint32_t>(out, static_cast<uint32_t>(r.name.size()));
    Put(out, r.name.data(), r.name.size());
    PutValue<uint8_t>(out, static_cast<uint8_t>(r.type));
    PutValue<uint8_t>(out, static_cast<uint8_t>(r.dtype));
    PutValue<uint8_t>(out, static_cast<uint8_t>(r.reduce));
    PutValue<uint8_t>(out, r.average ? 1 : 0);
    PutValue<int64_t>(out, r.count);
    PutValue<double>(out, r.prescale);
    PutValue<double>(out, r.postscale);
    PutValue<int32_t>(out, r.root);
    PutValue<uint32_t>(out, static_cast<uint32_t>(r.splits.size()));
    for (int64_t v : r.splits) PutValue<int64_t>(out, v);
  }
  return out;
}

StatusOr<std::vector<Request>> Engine::Decode(const std::string& bytes,
                                              uint8_t* stop) {
  Reader in(bytes);
  uint8_t sd = 0;
  uint32_t n = 0;
  auto bad = Status::DataLoss("negotiation", "malformed message from a peer");
  if (!in.Get(&sd) || !in.Get(&n) || sd > 2) return bad;
  *stop = sd;
  std::vector<Request> reqs;
  for (uint32_t i = 0; i < n; ++i) {
    Request r;
    uint32_t len = 0;
    uint8_t type, dtype, reduce, average;
    if (!in.Get(&len) || !in.GetString(&r.name, len) || !in.Get(&type) ||
        !in.Get(&dtype) || !in.Get(&reduce) || !in.Get(&average) ||
        !in.Get(&r.count) || !in.Get(&r.prescale) || !in.Get(&r.postscale) ||
        !in.Get(&r.root) || type > 4 || dtype > 7 || reduce > 3) {
      return bad;
    }
    uint32_t nsplits = 0;
    if (!in.Get(&nsplits) || nsplits > (1u << 24)) return bad;
    r.splits.resize(nsplits);
    for (int64_t& v : r.splits) {
      if (!in.Get(&v)) return bad;
    }
    r.type = static_cast<OpType>(type);
    r.dtype = static_cast<DataType>(dtype);
    r.reduce = static_cast<ReduceOp>(reduce);
    r.average = average != 0;
    reqs.push_back(std::move(r));
  }
  if (!in.AtEnd()) return bad;
  return reqs;
}

Engine::Engine(EngineOptions options, Backend* backend)
    : options_(options),
      backend_(backend),
      cache_(options.cache_capacity),
      thread_([this] { Loop(); }) {}

Engine::~Engine() { Shutdown(); }

Status Engine::Validate(const Request& request, void* data,
                        std::vector<uint8_t>* gathered) const {
  std::string who = "tensor '" + request.name + "'";
  if (request.name.empty()) {
    return Status::InvalidArgument("tensor name", "is empty");
  }
  if (request.count < 0) {
    return Status::InvalidArgument(who, "has a negative element count");
  }
  if (request.count > 0 && data == nullptr) {
    return Status::InvalidArgument(who, "has no data");
  }
  if ((request.type == OpType::kAllgather ||
       request.type == OpType::kReducescatter ||
       request.type == OpType::kAlltoall) &&
      gathered == nullptr) {
    return Status::InvalidArgument(who, "needs an output buffer");
  }
  if (request.type == OpType::kAlltoall) {
    int64_t sum = 0;
    for (int64_t v : request.splits) sum += v < 0 ? -(1LL << 62) : v;
    if (static_cast<int>(request.splits.size()) != options_.size ||
        sum != request.count) {
      return Status::InvalidArgument(
          who, "alltoall splits must give one count per rank (" +
                   std::to_string(options_.size) + ") adding up to the " +
                   std::to_string(request.count) + " elements");
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

void Engine::AddLocked(Request request, void* data,
                       std::vector<uint8_t>* gathered,
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
  fresh_.push_back(request);
  std::string name = request.name;
  pending_.emplace(name,
                   Pending{std::move(request), data, gathered, done, {}, {}});
}

std::shared_ptr<Completion> Engine::Enqueue(Request request, void* data,
                                            std::vector<uint8_t>* gathered) {
  auto done = std::make_shared<Completion>();
  Status refuse = Validate(request, data, gathered);
  {
    std::lock_guard<std::mutex> lock(mu_);
    AddLocked(std::move(request), data, gathered, done, refuse);
  }
  if (!refuse.ok()) {
    done->Set(refuse);
  } else {
    cv_.notify_one();
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
  cv_.notify_one();
  return done;
}

void Engine::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
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
  for (;;) {
    uint8_t stop;
    {
      // The cycle time bounds the wait for more tensors: a burst of
      // submissions (a backward pass) goes out together, and the cycle
      // starts as soon as the burst has been quiet for a moment.
      std::unique_lock<std::mutex> lock(mu_);
      auto deadline = std::chrono::steady_clock::now() + options_.cycle_time;
      cv_.wait_until(lock, deadline,
                     [this] { return stop_ || !fresh_.empty(); });
      size_t seen = fresh_.size();
      while (!stop_ && seen > 0 &&
             std::chrono::steady_clock::now() < deadline) {
        auto quiet = std::min<std::chrono::steady_clock::time_point>(
            deadline, std::chrono::steady_clock::now() + kQuiet);
        cv_.wait_until(lock, quiet,
                       [&] { return stop_ || fresh_.size() != seen; });
        if (fresh_.size() == seen) break;  // quiet: go
        seen = fresh_.size();
      }
      stop = stop_ ? kShutdown : kRunning;
    }
    if (stop == kRunning && options_.rank == 0 && InspectStalls()) {
      stop = kStalled;
    }
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

std::string Engine::StallReport(std::chrono::steady_clock::time_point now,
                                bool* past_shutdown) const {
  std::string report;
  int listed = 0;
  for (const auto& [name, seen] : seen_) {
    auto age = now - seen.since;
    if (age < options_.stall_warning) continue;
    if (options_.stall_shutdown.count() > 0 && age >= options_.stall_shutdown) {
      *past_shutdown = true;
    }
    if (listed++ >= 10) continue;
    std::vector<bool> has(options_.size, false);
    for (int r : seen.ranks) has[r] = true;
    std::string missing;
    for (int r = 0; r < options_.size; ++r) {
      if (!has[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    report += (report.empty() ? "" : "; ") + std::string("'") + name +
              "' (missing ranks: " + missing + ")";
  }
  for (const auto& [id, since] : cached_since_) {
    auto age = now - since;
    if (age < options_.stall_warning || !cache_.Has(id)) continue;
    if (options_.stall_shutdown.count() > 0 && age >= options_.stall_shutdown) {
      *past_shutdown = true;
    }
    if (listed++ >= 10) continue;
    std::string missing;
    auto found = cached_ranks_.find(id);
    static const std::vector<bool> kNone;
    const auto& ranks = found == cached_ranks_.end() ? kNone : found->second;
    for (int r = 0; r < options_.size; ++r) {
      if (r < static_cast<int>(ranks.size()) && !ranks[r]) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
    }
    report += (report.empty() ? "" : "; ") + std::string("'") +
              cache_.Get(id).name + "' (missing ranks: " + missing + ")";
  }
  if (listed > 10) report += "; and " + std::to_string(listed - 10) + " more";
  return report;
}

bool Engine::InspectStalls() {
  if (!options_.stall_check) return false;
  auto now = std::chrono::steady_clock::now();
  // Checked once per warning period (or shutdown time, if shorter).
  auto period =
      std::min(options_.stall_warning, options_.stall_shutdown.count() > 0
                                           ? options_.stall_shutdown
                                           : options_.stall_warning);
  if (now - last_stall_check_ < period) return false;
  last_stall_check_ = now;
  bool past_shutdown = false;
  std::string report = StallReport(now, &past_shutdown);
  if (report.empty()) return false;
  std::string warning =
      "stalled tensors: some ranks submitted them and others did not for " +
      std::to_string(options_.stall_warning.count() / 1000) + " s: " + report +
      ". Every rank must submit the same tensors (in any order).";
  if (options_.on_stall_warning) {
    options_.on_stall_warning(warning);
  } else {
    HVD_LOG(Warning) << warning;
  }
  return past_shutdown;
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
    if (r.type != OpType::kAllgather && r.type != OpType::kAlltoall) {
      id = cache_.Lookup(r);
    }
    if (id) {
      my_cached_.insert(*id);
    } else {
      uncached.push_back(std::move(r));
    }
  }
  const size_t n = static_cast<size_t>(options_.size);
  const size_t capacity = cache_.capacity();

  // Phase 1, every cycle: a fixed-size header per rank (stop reason, "I
  // have uncached requests", and the bits of its pending cached tensors).
  const size_t header_size = 2 + (capacity + 7) / 8;
  std::string header(header_size, '\0');
  header[0] = static_cast<char>(stop);
  header[1] = uncached.empty() ? 0 : 1;
  for (uint32_t id : my_cached_)
    header[2 + id / 8] |= static_cast<char>(1 << (id % 8));
  std::string headers(header_size * n, '\0');
  HVD_RETURN_IF_ERROR(backend_->Allgatherv(
      header.data(), headers.data(), std::vector<size_t>(n, header_size)));
  bool any_uncached = false;
  for (size_t r = 0; r < n; ++r) {
    uint8_t sd = static_cast<uint8_t>(headers[r * header_size]);
    if (sd > 2)
      return Status::DataLoss("negotiation", "malformed header from a peer");
    if (sd > *everyone_stop) *everyone_stop = sd;
    any_uncached |= headers[r * header_size + 1] != 0;
  }
  std::vector<std::string> ready;
  auto now = std::chrono::steady_clock::now();
  Timeline* tl = options_.timeline;
  for (uint32_t id = 0; id < capacity; ++id) {
    int have = 0;
    for (size_t r = 0; r < n; ++r) {
      have += (headers[r * header_size + 2 + id / 8] >> (id % 8)) & 1;
    }
    if (have == 0) {
      cached_since_.erase(id);
      continue;
    }
    if (!cache_.Has(id)) {
      return Status::DataLoss("negotiation",
                              "a peer named an unknown cached tensor");
    }
    if (have == static_cast<int>(n)) {
      ready.push_back(cache_.Get(id).name);
      if (tl) {
        tl->NegotiateStart(ready.back(), OpTypeName(cache_.Get(id).type));
        tl->NegotiateEnd(ready.back());
      }
      cached_since_.erase(id);
    } else {
      cached_since_.emplace(id, now);  // for the stall inspector
      auto& ranks = cached_ranks_[id];
      ranks.assign(n, false);
      for (size_t r = 0; r < n; ++r) {
        ranks[r] = (headers[r * header_size + 2 + id / 8] >> (id % 8)) & 1;
      }
    }
  }

  // Phase 2, only when some rank has requests the cache does not know:
  // their sizes, then the requests themselves.
  if (any_uncached) {
    const std::string msg = Encode(0, uncached);
    std::vector<uint64_t> sizes(n);
    uint64_t my_size = msg.size();
    HVD_RETURN_IF_ERROR(backend_->Allgatherv(&my_size, sizes.data(),
                                             std::vector<size_t>(n, 8)));
    std::vector<size_t> bytes(sizes.begin(), sizes.end());
    size_t total = 0;
    for (size_t b : bytes) total += b;
    std::string all(total, '\0');
    HVD_RETURN_IF_ERROR(backend_->Allgatherv(msg.data(), all.data(), bytes));
    size_t off = 0;
    for (size_t r = 0; r < n; ++r) {
      std::string part = all.substr(off, bytes[r]);
      off += bytes[r];
      uint8_t unused = 0;
      HVD_ASSIGN_OR_RETURN(std::vector<Request> reqs, Decode(part, &unused));
      for (Request& req : reqs) {
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
          s.mismatch = "rank " + std::to_string(r) + " asks for " +
                       Describe(req) + " but rank " +
                       std::to_string(s.first_rank) + " for " +
                       Describe(s.first);
        }
        s.ranks.push_back(static_cast<int>(r));
        if (s.counts.empty()) s.counts.assign(n, 0);
        s.counts[r] = req.count;
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
        if (s.ranks.size() == n) {
          ready.push_back(req.name);
          if (tl) tl->NegotiateEnd(req.name);
        }
      }
    }
  }
  if (tl && tl->mark_cycles() && !ready.empty()) tl->MarkCycle();
  return Execute(ready);
}

}  // namespace hvd::runtime
