// One negotiation cycle of the engine: this rank's message, the exchange,
// the negotiation, then execution (execute.cc) and the tuner's turn
// (tune.cc).
#include <algorithm>
#include <chrono>
#include <cstring>

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
                                 const std::vector<const Request*>& uncached) {
  std::string msg;
  msg.reserve(64);
  PutMessageHead(msg, stop, my_cached_.bits(), uncached);
  // The data of small pending allreduces: when every rank sends a tensor's
  // data in the same cycle, nobody needs a collective for it.
  const size_t count_at = msg.size();
  PutValue<uint32_t>(msg, 0);  // how many, filled in below
  uint32_t neager = 0;
  std::string_view eager_name;
  size_t data_at = 0;
  if (options_.size > 1 && options_.eager_cycle_bytes > 0) {
    size_t budget = options_.eager_cycle_bytes;
    std::lock_guard<std::mutex> lock(mu_);
    eager_candidates_.clear();
    size_t wanted = 0;
    for (const auto& [name, p] : names_) {
      if (!p.live) continue;
      const Request& r = p.request;
      if (r.type != OpType::kAllreduce || r.device >= 0 || r.adasum) continue;
      const size_t bytes = static_cast<size_t>(r.count) * DataTypeSize(r.dtype);
      if (bytes > options_.eager_tensor_bytes) continue;
      eager_candidates_.push_back(&p);
      wanted += bytes;
    }
    // When the budget leaves some out: in name order, as every rank holding
    // the same tensors takes them, so it leaves out the same ones
    // everywhere (names_ is hashed). Otherwise each rank's data is found
    // by name, and no order is needed.
    if (wanted > budget) {
      std::sort(eager_candidates_.begin(), eager_candidates_.end(),
                [](const Pending* a, const Pending* b) {
                  return a->request.name < b->request.name;
                });
    }
    for (const Pending* p : eager_candidates_) {
      const Request& r = p->request;
      const size_t bytes = static_cast<size_t>(r.count) * DataTypeSize(r.dtype);
      if (bytes > budget) continue;
      budget -= bytes;
      eager_name = r.name;
      data_at =
          PutEager(msg, r.name,
                   std::string_view(static_cast<const char*>(p->data), bytes));
      ++neager;
    }
  }
  std::memcpy(&msg[count_at], &neager, sizeof(neager));
  // Express-shaped: one cached allreduce, its data along, nothing else;
  // or cached tensors only, no data at all (the whole message compares).
  express_at_ = 0;
  express_group_ = false;
  if (stop == 0 && uncached.empty() && !my_cached_.empty() &&
      !outgoing_knobs_) {
    if (neager == 0) {
      express_at_ = msg.size();
      express_group_ = true;
    } else if (my_cached_.size() == 1 && neager == 1 &&
               cache_.Get(my_cached_.first()).name == eager_name) {
      express_at_ = data_at;
    }
  }
  // Rank 0's autotuned values, which every rank applies after this cycle.
  PutKnobs(msg, outgoing_knobs_);
  outgoing_knobs_.reset();
  return msg;
}

std::optional<uint32_t> Engine::CachedIdOf(Pending& p) {
  // An id unchanged since (by the generation) stands for the same entry,
  // the one of this name: what Lookup would find.
  std::optional<uint32_t> id;
  if (p.last_id != UINT32_MAX && p.last_generation == cache_.generation()) {
    if (cache_.Get(p.last_id) == p.request) id = p.last_id;
  } else {
    id = cache_.Lookup(p.request);
  }
  p.last_id = id.value_or(UINT32_MAX);
  p.last_generation = cache_.generation();
  if (id) {
    // Finish needs no lookup either while the generation holds.
    p.cache_id = *id;
    p.cache_generation = p.last_generation;
  }
  return id;
}

std::vector<const Request*> Engine::SplitCached(
    const std::vector<Pending*>& mine) {
  ++cycle_serial_;
  std::vector<const Request*> uncached;
  for (Pending* p : mine) {
    const Request* r = &p->request;
    std::optional<uint32_t> id;
    if (cache_enabled_ &&
        (r->type == OpType::kAllreduce || r->type == OpType::kBroadcast ||
         r->type == OpType::kReducescatter)) {
      id = CachedIdOf(*p);
    }
    if (cache_enabled_) tally_->CacheLookup(id.has_value());
    if (id) {
      my_cached_.insert(*id);
      if (cached_now_.size() < cache_.capacity()) {
        cached_now_.resize(cache_.capacity());
      }
      cached_now_[*id] = {p, cycle_serial_};
    } else {
      uncached.push_back(r);
    }
  }
  return uncached;
}

Status Engine::ExchangeMessages(uint8_t stop,
                                const std::vector<const Request*>& uncached) {
  bool urgent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    urgent = live_ > 0;
  }
  const auto exchange_start = std::chrono::steady_clock::now();
  merged_ = nullptr;
  cycle_mine_ = BuildMessage(stop, uncached);
  HVD_RETURN_IF_ERROR(
      control_->Exchange(cycle_mine_, &cycle_messages_, urgent));
  merged_ = control_->MergedGroups();
  exchanged_at_ = std::chrono::steady_clock::now();
  // A cycle with work in it: its wait for the other ranks goes to the
  // metrics (idle wake-ups would drown the figure), once the cycle knows
  // whether it is an express one.
  exchange_seconds_ =
      urgent || !uncached.empty()
          ? std::chrono::duration<double>(exchanged_at_ - exchange_start)
                .count()
          : -1;
  return Status::Ok();
}

Status Engine::ReadOffers(uint8_t* everyone_stop,
                          std::vector<RankOffer>* offers,
                          std::optional<Knobs>* knobs) {
  const size_t n = static_cast<size_t>(options_.size);
  const std::vector<std::string>& all = cycle_messages_;
  // A merged group's ranks said what its first rank's entry says; its
  // data is the group's, reduced.
  std::vector<CycleMessage> msgs(n);
  size_t groups = 0;
  for (size_t r = 0; r < n; ++r) {
    if (!Leads(static_cast<int>(r))) continue;
    ++groups;
    if (!ParseCycleMessage(all[r], &msgs[r]) || msgs[r].stop > 2) {
      return Status::DataLoss(
          "negotiation", "malformed message from rank " + std::to_string(r));
    }
    if (msgs[r].stop > *everyone_stop) *everyone_stop = msgs[r].stop;
  }
  offers->assign(n, RankOffer{});
  for (size_t r = 0; r < n; ++r) {
    if (!Leads(static_cast<int>(r))) {
      (*offers)[r] = (*offers)[(*merged_)[r]];  // its first rank is lower
      continue;
    }
    uint8_t unused = 0;
    (*offers)[r].cache_bits = msgs[r].bits;
    HVD_ASSIGN_OR_RETURN((*offers)[r].requests,
                         Decode(msgs[r].requests, &unused));
  }
  eager_.clear();
  for (size_t r = 0, group = 0; r < n; ++r) {
    if (!Leads(static_cast<int>(r))) continue;
    for (const auto& [name, data] : msgs[r].eager) {
      auto& v = eager_[std::string(name)];
      v.resize(groups);
      v[group] = data;
    }
    ++group;
  }
  *knobs = msgs[0].knobs;
  return Status::Ok();
}

void Engine::ResendDropped(const Negotiation& round) {
  for (const auto& [id, name] : round.dropped) {
    // This rank had it pending through the dropped entry: in full next.
    if (my_cached_.erase(id)) {
      std::lock_guard<std::mutex> lock(mu_);
      if (Pending* p = FindPendingLocked(name)) fresh_.push_back(p);
    }
  }
}

void Engine::CompleteJoins() {
  std::shared_ptr<Completion> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Pending* p = FindPendingLocked(kJoinName)) {
      done = std::move(p->done);
      flight_.Finished(p->flight, std::chrono::steady_clock::now(), true);
      EndPendingLocked(*p);
    }
  }
  if (done) done->Set(Status::Ok(), negotiator_.last_joined());
  negotiator_.ResetJoins();
}

Status Engine::RunCycle(uint8_t stop, uint8_t* everyone_stop, bool driver,
                        bool* handed_off) {
  std::vector<Pending*> mine;
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
  HVD_RETURN_IF_ERROR(ExchangeMessages(stop, SplitCached(mine)));
  if (express_at_ > 0) {
    Status s;
    if (TryExpress(&s)) return s;
  }
  return NegotiateAndRun(everyone_stop);
}

Status Engine::NegotiateAndRun(uint8_t* everyone_stop) {
  if (exchange_seconds_ >= 0) Metrics::Process().Negotiation(exchange_seconds_);
  std::vector<RankOffer> offers;
  std::optional<Knobs> knobs;
  HVD_RETURN_IF_ERROR(ReadOffers(everyone_stop, &offers, &knobs));
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
