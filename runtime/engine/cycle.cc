// One negotiation cycle of the engine: this rank's message, the exchange,
// the negotiation, then execution (execute.cc) and the tuner's turn
// (tune.cc).
#include <chrono>

#include "runtime/engine/engine.h"
#include "runtime/engine/message.h"
#include "runtime/metrics.h"
#include "runtime/timeline.h"

namespace hvd::runtime {
namespace {

void RecordNegotiation(Timeline* tl, const Negotiation& round) {
  for (const NegotiationEvent& e : round.events) {
    switch (e.kind) {
      case NegotiationEvent::kStart:
        tl->NegotiateStart(e.name, OpTypeName(e.type));
        break;
      case NegotiationEvent::kRankReady:
        tl->NegotiateRankReady(e.name, e.rank);
        break;
      case NegotiationEvent::kEnd:
        tl->NegotiateEnd(e.name);
        break;
    }
  }
}

}  // namespace

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
      if (r.type != OpType::kAllreduce || r.device >= 0 || r.adasum) continue;
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

std::vector<Request> Engine::SplitCached(std::vector<Request> mine) {
  std::vector<Request> uncached;
  for (Request& r : mine) {
    std::optional<uint32_t> id;
    if (cache_enabled_ &&
        (r.type == OpType::kAllreduce || r.type == OpType::kBroadcast ||
         r.type == OpType::kReducescatter)) {
      id = cache_.Lookup(r);
    }
    if (cache_enabled_) Metrics::Process().CacheLookup(id.has_value());
    if (id) {
      my_cached_.insert(*id);
    } else {
      uncached.push_back(std::move(r));
    }
  }
  return uncached;
}

Status Engine::ExchangeOffers(uint8_t stop,
                              const std::vector<Request>& uncached,
                              uint8_t* everyone_stop,
                              std::vector<RankOffer>* offers,
                              std::optional<Knobs>* knobs) {
  const size_t n = static_cast<size_t>(options_.size);
  std::vector<std::string>& all = cycle_messages_;
  bool urgent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    urgent = !pending_.empty();
  }
  const auto exchange_start = std::chrono::steady_clock::now();
  HVD_RETURN_IF_ERROR(
      control_->Exchange(BuildMessage(stop, uncached), &all, urgent));
  if (urgent || !uncached.empty()) {
    // A cycle with work in it: its wait for the other ranks (idle wake-ups
    // would drown the figure).
    Metrics::Process().Negotiation(
        std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                      exchange_start)
            .count());
  }
  std::vector<CycleMessage> msgs(n);
  for (size_t r = 0; r < n; ++r) {
    if (!ParseCycleMessage(all[r], &msgs[r]) || msgs[r].stop > 2) {
      return Status::DataLoss(
          "negotiation", "malformed message from rank " + std::to_string(r));
    }
    if (msgs[r].stop > *everyone_stop) *everyone_stop = msgs[r].stop;
  }
  offers->assign(n, RankOffer{});
  for (size_t r = 0; r < n; ++r) {
    uint8_t unused = 0;
    (*offers)[r].cache_bits = msgs[r].bits;
    HVD_ASSIGN_OR_RETURN((*offers)[r].requests,
                         Decode(msgs[r].requests, &unused));
  }
  eager_.clear();
  for (size_t r = 0; r < n; ++r) {
    for (const auto& [name, data] : msgs[r].eager) {
      auto& v = eager_[std::string(name)];
      v.resize(n);
      v[r] = data;
    }
  }
  *knobs = msgs[0].knobs;
  return Status::Ok();
}

void Engine::ResendDropped(const Negotiation& round) {
  for (const auto& [id, name] : round.dropped) {
    // This rank had it pending through the dropped entry: in full next.
    if (my_cached_.erase(id)) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pending_.find(name);
      if (it != pending_.end()) fresh_.push_back(it->second.request);
    }
  }
}

void Engine::CompleteJoins() {
  std::shared_ptr<Completion> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(kJoinName);
    if (it != pending_.end()) {
      done = it->second.done;
      pending_.erase(it);
    }
  }
  if (done) done->Set(Status::Ok(), negotiator_.last_joined());
  negotiator_.ResetJoins();
}

Status Engine::RunCycle(uint8_t stop, uint8_t* everyone_stop, bool driver,
                        bool* handed_off) {
  std::vector<Request> mine;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Under the lock that queues them, so no GPU tensor slips in after.
    if (driver && device_seen_) {
      *handed_off = true;
      return Status::Ok();
    }
    mine.swap(fresh_);
  }
  // Requests the cache knows (same name and metadata as a completed one)
  // only set their bit; the rest travel in full.
  std::vector<RankOffer> offers;
  std::optional<Knobs> knobs;
  HVD_RETURN_IF_ERROR(ExchangeOffers(stop, SplitCached(std::move(mine)),
                                     everyone_stop, &offers, &knobs));
  // The timeline may be started and stopped at any time (rank 0).
  Timeline* tl = options_.timeline && options_.timeline->enabled()
                     ? options_.timeline
                     : nullptr;
  negotiator_.set_record_events(tl != nullptr);
  HVD_ASSIGN_OR_RETURN(
      Negotiation round,
      negotiator_.Round(offers, cache_, std::chrono::steady_clock::now()));
  ResendDropped(round);
  if (tl) RecordNegotiation(tl, round);
  std::vector<Agreed>& ready = round.ready;
  if (tl && tl->mark_cycles() && !ready.empty()) tl->MarkCycle();
  cycle_bytes_ = 0;
  HVD_RETURN_IF_ERROR(Execute(ready));
  if (knobs) HVD_RETURN_IF_ERROR(ApplyKnobs(*knobs));
  if (tuner_) TuneAfterCycle();
  // Everyone has joined: every rank's join completes, and the job may go
  // on (or join again).
  if (negotiator_.AllJoined()) CompleteJoins();
  return Status::Ok();
}

}  // namespace hvd::runtime
