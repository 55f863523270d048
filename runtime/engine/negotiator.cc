#include "runtime/engine/negotiator.h"

#include <algorithm>
#include <utility>

#include "runtime/dtype.h"

namespace hvd::runtime {
namespace {

bool HasBit(std::string_view bits, uint32_t id) {
  return id / 8 < bits.size() && ((bits[id / 8] >> (id % 8)) & 1);
}

// The ids any rank set a bit for, ascending: the OR of the bit vectors a
// byte at a time, since walking the whole capacity cost microseconds a
// cycle.
std::vector<uint32_t> NamedIds(const std::vector<RankOffer>& offers) {
  size_t longest = 0;
  for (const RankOffer& o : offers) {
    longest = std::max(longest, o.cache_bits.size());
  }
  std::vector<uint32_t> named;
  for (size_t byte = 0; byte < longest; ++byte) {
    unsigned any = 0;
    for (const RankOffer& o : offers) {
      if (byte < o.cache_bits.size()) {
        any |= static_cast<uint8_t>(o.cache_bits[byte]);
      }
    }
    for (; any; any &= any - 1) {
      named.push_back(static_cast<uint32_t>(byte * 8) +
                      static_cast<uint32_t>(__builtin_ctz(any)));
    }
  }
  return named;
}

std::string RankList(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

}  // namespace

std::string DescribeRequest(const Request& r) {
  std::string op;
  switch (r.type) {
    case OpType::kAllreduce:
      op = std::string(r.adasum    ? "adasum"
                       : r.average ? "average"
                                   : ReduceOpName(r.reduce)) +
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

bool SameMetadata(const Request& a, const Request& b) {
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
  return a.reduce == b.reduce && a.average == b.average &&
         a.adasum == b.adasum && a.shape == b.shape &&
         a.prescale == b.prescale && a.postscale == b.postscale &&
         a.root == b.root;
}

Negotiator::Negotiator(int size, bool record_events)
    : size_(size),
      record_events_(record_events),
      joined_(static_cast<size_t>(size), false) {}

bool Negotiator::Complete(const std::vector<int>& ranks) const {
  std::vector<bool> has = joined_;
  for (int r : ranks) has[r] = true;
  return std::all_of(has.begin(), has.end(), [](bool b) { return b; });
}

bool Negotiator::AllJoined() const {
  return std::all_of(joined_.begin(), joined_.end(), [](bool b) { return b; });
}

void Negotiator::ResetJoins() { joined_.assign(joined_.size(), false); }

void Negotiator::ForgetCached(uint32_t id) {
  cached_since_.erase(id);
  cached_ranks_.erase(id);
}

void Negotiator::ForgetAllCached() {
  cached_since_.clear();
  cached_ranks_.clear();
}

void Negotiator::Event(Negotiation& out, NegotiationEvent::Kind kind,
                       const std::string& name, OpType type, int rank) const {
  if (record_events_) out.events.push_back({kind, name, type, rank});
}

void Negotiator::Ready(const std::string& name, Negotiation& out) {
  auto it = seen_.find(name);
  Seen& s = it->second;
  out.ready.push_back(Agreed{name, std::move(s.first), std::move(s.mismatch),
                             std::move(s.counts), std::move(s.splits)});
  Event(out, NegotiationEvent::kEnd, name, out.ready.back().meta.type);
  seen_.erase(it);
}

StatusOr<Negotiation> Negotiator::Round(const std::vector<RankOffer>& offers,
                                        ResponseCache& cache, SteadyTime now) {
  const size_t n = static_cast<size_t>(size_);
  Negotiation out;
  for (size_t r = 0; r < n; ++r) {
    for (const Request& q : offers[r].requests) {
      if (q.type == OpType::kJoin && !joined_[r]) {
        joined_[r] = true;
        last_joined_ = static_cast<int>(r);
        out.joins = true;
      }
    }
  }

  // Cached tensors: ready when every rank set the bit (or joined).
  for (auto it = cached_since_.begin(); it != cached_since_.end();) {
    bool someone = false;
    for (size_t r = 0; r < n && !someone; ++r) {
      someone = HasBit(offers[r].cache_bits, it->first);
    }
    // Nobody names it any more: no stall to watch.
    it = someone ? std::next(it) : cached_since_.erase(it);
  }
  for (uint32_t id : NamedIds(offers)) {
    if (!cache.Has(id)) {
      return Status::DataLoss("negotiation",
                              "a peer named an unknown cached tensor");
    }
    bool complete = true;
    for (size_t r = 0; r < n; ++r) {
      complete &= HasBit(offers[r].cache_bits, id) || joined_[r];
    }
    const Request& meta = cache.Get(id);
    if (complete) {
      Event(out, NegotiationEvent::kStart, meta.name, meta.type);
      Event(out, NegotiationEvent::kEnd, meta.name, meta.type);
      out.ready.push_back(Agreed{meta.name, meta, {}, {}, {}});
      ForgetCached(id);
    } else {
      cached_since_.emplace(id, now);  // for the stall report
      auto& ranks = cached_ranks_[id];
      ranks.assign(n, false);
      for (size_t r = 0; r < n; ++r) {
        ranks[r] = HasBit(offers[r].cache_bits, id);
      }
    }
  }

  // Requests in full, in rank order.
  for (size_t r = 0; r < n; ++r) {
    for (const Request& req : offers[r].requests) {
      if (req.type == OpType::kJoin) continue;
      // A full request for a cached name means some rank changed its
      // metadata: every rank drops the entry (they all see this message).
      if (std::optional<uint32_t> stale = cache.Erase(req.name)) {
        ForgetCached(*stale);
        out.dropped.emplace_back(*stale, req.name);
      }
      Seen& s = seen_[req.name];
      if (s.ranks.empty()) {
        Event(out, NegotiationEvent::kStart, req.name, req.type);
        s.first = req;
        s.first_rank = static_cast<int>(r);
        s.since = now;
      } else if (s.mismatch.empty() && !SameMetadata(s.first, req)) {
        // Lower rank first, so the same mistake reads the same on every
        // run, whichever rank's request happened to arrive first.
        std::pair<int, const Request*> low{s.first_rank, &s.first},
            high{static_cast<int>(r), &req};
        if (high.first < low.first) std::swap(low, high);
        s.mismatch = "rank " + std::to_string(low.first) + " asks for " +
                     DescribeRequest(*low.second) + " but rank " +
                     std::to_string(high.first) + " for " +
                     DescribeRequest(*high.second);
      }
      Event(out, NegotiationEvent::kRankReady, req.name, req.type,
            static_cast<int>(r));
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
      if (Complete(s.ranks)) Ready(req.name, out);
    }
  }
  // A join can complete tensors the joined rank never named.
  if (out.joins) {
    std::vector<std::string> completed;
    for (const auto& [name, s] : seen_) {
      if (!s.ranks.empty() && Complete(s.ranks)) completed.push_back(name);
    }
    for (const std::string& name : completed) Ready(name, out);
  }
  return out;
}

std::string Negotiator::StallReport(SteadyTime now,
                                    std::chrono::milliseconds warning,
                                    std::chrono::milliseconds shutdown,
                                    const ResponseCache& cache,
                                    bool* past_shutdown) const {
  std::string report;
  int listed = 0;
  auto note = [&](const std::string& name, SteadyTime since,
                  const std::vector<bool>& has) {
    auto age = now - since;
    if (age < warning) return;
    if (shutdown.count() > 0 && age >= shutdown) *past_shutdown = true;
    if (listed++ >= 10) return;
    std::vector<int> missing;
    for (int r = 0; r < size_; ++r) {
      if (r < static_cast<int>(has.size()) && !has[r]) missing.push_back(r);
    }
    report += (report.empty() ? "" : "; ") + std::string("'") + name +
              "' (missing ranks: " + RankList(missing) + ")";
  };
  for (const auto& [name, seen] : seen_) {
    std::vector<bool> has(size_, false);
    for (int r : seen.ranks) has[r] = true;
    note(name, seen.since, has);
  }
  for (const auto& [id, since] : cached_since_) {
    if (!cache.Has(id)) continue;
    auto found = cached_ranks_.find(id);
    note(cache.Get(id).name, since,
         found == cached_ranks_.end() ? std::vector<bool>() : found->second);
  }
  if (listed > 10) report += "; and " + std::to_string(listed - 10) + " more";
  return report;
}

}  // namespace hvd::runtime
