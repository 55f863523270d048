// The negotiator: the engine's decision of which tensors are ready, made
// alike on every rank from every rank's message of a cycle (the protocol
// is in engine.h). Pure: no threads, sockets or clocks of its own;
// the engine feeds it the decoded messages, the response cache and the
// time, and acts on what it answers.
//
// A tensor is ready when every rank has named it, in full or by its cache
// bit, or has joined. Its metadata must agree across ranks; a mismatch is
// reported with the tensor (every rank then completes it with the same
// error). Tensors named by some ranks and not others wait, and the stall
// report names them with their missing ranks.
//
// Not thread-safe: the engine thread owns it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/engine/request.h"
#include "runtime/engine/response_cache.h"

namespace hvd::runtime {

using SteadyTime = std::chrono::steady_clock::time_point;

// What one rank said this cycle.
struct RankOffer {
  // Bit id set: this rank has the cached tensor `id` pending.
  std::string_view cache_bits;
  // Its other new requests, in full, in submission order (joins included).
  std::vector<Request> requests;
};

// A tensor every rank has named (or that the ranks that joined complete).
struct Agreed {
  std::string name;
  Request meta;  // as the lowest rank to name it described it
  // Non-empty when the ranks disagree: every rank fails it with this.
  std::string mismatch;
  std::vector<int64_t> counts;               // by rank: first dimension
  std::vector<std::vector<int64_t>> splits;  // by rank (alltoall)
  bool operator==(const Agreed&) const = default;
};

// For the timeline: what the negotiation saw, in order.
struct NegotiationEvent {
  enum Kind { kStart, kRankReady, kEnd } kind;
  std::string name;
  OpType type = OpType::kAllreduce;
  int rank = -1;  // kRankReady
  bool operator==(const NegotiationEvent&) const = default;
};

struct Negotiation {
  // In the order every rank runs them: cached tensors by id, then the
  // others in rank order of their requests.
  std::vector<Agreed> ready;
  // Cache entries dropped because a rank sent the tensor in full with
  // other metadata: a rank that had it pending by its bit sends it again.
  std::vector<std::pair<uint32_t, std::string>> dropped;
  bool joins = false;                    // some rank joined this cycle
  std::vector<NegotiationEvent> events;  // with record_events only
};

class Negotiator {
 public:
  explicit Negotiator(int size, bool record_events = false);

  // One cycle, from every rank's offer (index = rank). Drops stale entries
  // from `cache` (every rank does the same). DataLoss when a rank names a
  // cached tensor this rank does not know (the caches diverged).
  StatusOr<Negotiation> Round(const std::vector<RankOffer>& offers,
                              ResponseCache& cache, SteadyTime now);

  // Whether Round fills Negotiation::events (while a timeline records).
  void set_record_events(bool on) { record_events_ = on; }

  // Nothing is half-negotiated: no tensor some ranks named and others not
  // yet, no rank joined. The same on every rank.
  bool Idle() const {
    return seen_.empty() && cached_since_.empty() &&
           std::none_of(joined_.begin(), joined_.end(),
                        [](bool b) { return b; });
  }

  // Every rank has joined: their joins complete with last_joined(), and
  // the job may go on (or join again).
  bool AllJoined() const;
  int last_joined() const { return last_joined_; }
  void ResetJoins();
  const std::vector<bool>& joined() const { return joined_; }

  // The cache entry `id` is gone (evicted or the cache cleared).
  void ForgetCached(uint32_t id);
  void ForgetAllCached();

  // Tensors waiting for some ranks for `warning` or longer, with their
  // missing ranks (at most 10 named); `*past_shutdown` is set when one has
  // waited `shutdown` or longer (0: never). Empty when none.
  std::string StallReport(SteadyTime now, std::chrono::milliseconds warning,
                          std::chrono::milliseconds shutdown,
                          const ResponseCache& cache,
                          bool* past_shutdown) const;

 private:
  struct Seen {     // what the negotiation knows of one tensor
    Request first;  // metadata of the first rank that named it
    int first_rank = -1;
    std::vector<int> ranks;
    std::vector<int64_t> counts;
    std::vector<std::vector<int64_t>> splits;
    std::string mismatch;
    SteadyTime since;  // first named
  };
  // True when every rank has named the tensor or joined.
  bool Complete(const std::vector<int>& ranks) const;
  // Moves a complete tensor from seen_ into `out.ready`.
  void Ready(const std::string& name, Negotiation& out);
  void Event(Negotiation& out, NegotiationEvent::Kind kind,
             const std::string& name, OpType type, int rank = -1) const;

  const int size_;
  bool record_events_;
  std::map<std::string, Seen> seen_;
  // Cached tensors some ranks named and others not yet: since when, and
  // which ranks have.
  std::map<uint32_t, SteadyTime> cached_since_;
  std::map<uint32_t, std::vector<bool>> cached_ranks_;
  std::vector<bool> joined_;  // by rank, until every rank has joined
  int last_joined_ = -1;
};

// "average allreduce of float32 shape [2x3]": a request in an error.
std::string DescribeRequest(const Request& r);

// Whether two ranks' requests for one tensor agree (an allgather's first
// dimension and an alltoall's splits may differ).
bool SameMetadata(const Request& a, const Request& b);

}  // namespace hvd::runtime
