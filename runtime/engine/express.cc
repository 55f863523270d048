// The steady state's shortcut through a cycle. A training loop submits the
// same small tensors step after step: each is in the response cache, so a
// rank's message is its cache bit and the tensor's data, and when every
// rank sends the same, the negotiation can only decide one thing: that
// tensor is ready, reduced from the data that came along. The express path
// sees that from the raw messages (equal to this rank's but for the data)
// and completes the tensor as the full cycle would (same reduction in rank
// order, same cache touch, same metrics), without decoding the messages,
// negotiating or planning. Anything else (a miss, a mismatch, a second
// tensor, a join, a stop, the tuner's knobs, a tensor some rank named
// earlier) makes the messages differ or the negotiator busy, and the cycle
// goes on in full with the same messages, so every error the negotiation
// gives stays as it is.
//
// Ranks need not agree on taking the shortcut: it leaves the cache, the
// negotiator and the pending requests exactly as the full cycle does.
//
// The fast lane goes one step further for a blocking allreduce submitted
// while this rank has nothing else in flight: the caller sends the message
// a cycle would send for it (its cache bit and its data) without queuing
// it, and when the cycle is an express one the allreduce completes from
// the data with no request, completion or name held at all. When it is
// not, the request becomes what its message said it was, a pending
// request of this cycle by its bit, and the cycle goes on in full.
#include <algorithm>
#include <chrono>

#include "common/copy_bytes.h"
#include "common/equal_bytes.h"
#include "runtime/engine/engine.h"
#include "runtime/engine/message.h"
#include "runtime/metrics.h"
#include "runtime/timeline.h"

namespace hvd::runtime {

bool Engine::SameButData(const std::string& mine) const {
  for (int q = 0; q < static_cast<int>(cycle_messages_.size()); ++q) {
    if (q == options_.rank || !Leads(q)) continue;
    const std::string& theirs = cycle_messages_[q];
    // The message ends with the data and the knobs flag (no knobs).
    if (theirs.size() != mine.size() ||
        !EqualBytes(theirs.data(), mine.data(), express_at_) ||
        theirs.back() != mine.back()) {
      return false;
    }
  }
  return true;
}

size_t Engine::ExpressViews(const std::string& mine) {
  const size_t data_bytes = mine.size() - express_at_ - 1;
  express_views_.clear();
  for (size_t q = 0; q < cycle_messages_.size(); ++q) {
    if (!Leads(static_cast<int>(q))) continue;
    // A plane that merged filled every group's entry, this rank's too.
    const std::string& m =
        static_cast<int>(q) == options_.rank && merged_ == nullptr
            ? mine
            : cycle_messages_[q];
    // Every message is as long as this rank's (SameButData).
    express_views_.push_back(
        std::string_view(m.data() + express_at_, data_bytes));
  }
  return data_bytes;
}

bool Engine::TryExpress(Status* ran) {
  // The timeline records the negotiation's events, and the tuner scores
  // whole cycles: both take the full path.
  if (tuner_ || !negotiator_.Idle() ||
      (options_.timeline && options_.timeline->enabled()) ||
      !SameButData(cycle_mine_)) {
    return false;
  }
  if (express_group_) return ExpressGroup(ran);
  const uint32_t id = my_cached_.first();
  Pending* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    p = FindPendingLocked(cache_.Get(id).name);
  }
  if (p == nullptr) return false;
  const size_t data_bytes = ExpressViews(cycle_mine_);
  // Timed from the exchange's end (a clock read costs tens of ns here,
  // and this path is a microsecond).
  cycle_bytes_ = executor_.ReduceEager(p, express_views_);
  const auto reduced_at = std::chrono::steady_clock::now();
  // As Finish does for a cached request: its entry is touched (its
  // metadata is the entry's), and it is pending no more.
  my_cached_.erase(id);
  cache_.Touch(id);
  flight_.Ran(p->flight, exchanged_at_, reduced_at);
  std::shared_ptr<Completion> done;
  double busy = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done = std::move(p->done);
    EndPendingLocked(*p);
    // AllreducesDoneLocked's bookkeeping, its metric in the one call below.
    if (allreduces_pending_ > 0 && --allreduces_pending_ == 0) {
      busy =
          std::chrono::duration<double>(reduced_at - allreduce_since_).count();
    }
  }
  tally_->Express(
      exchange_seconds_ < 0 ? 0 : exchange_seconds_, data_bytes,
      std::chrono::duration<double>(reduced_at - exchanged_at_).count(), busy);
  CountOne(express_);
  done->Set(Status::Ok());
  return true;
}

bool Engine::ExpressGroup(Status* ran) {
  // Every rank names the same cached tensors and nothing else, and nothing
  // is half-negotiated: the negotiation would find each of them ready, in
  // the order of their ids, with the cache's metadata (theirs).
  my_cached_.ids(&express_ids_);
  express_group_pending_.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint32_t id : express_ids_) {
      Pending* p =
          id < cached_now_.size() && cached_now_[id].serial == cycle_serial_
              ? cached_now_[id].pending
              : FindPendingLocked(cache_.Get(id).name);
      if (p == nullptr) return false;
      express_group_pending_.push_back(p);
      p->cache_id = id;
      p->cache_generation = cache_.generation();
    }
  }
  if (exchange_seconds_ >= 0) Metrics::Process().Negotiation(exchange_seconds_);
  flight_.MarkEach(
      express_group_pending_, [](const Pending* p) { return p->flight; },
      FlightRecorder::Phase::kNegotiated, exchanged_at_);
  cycle_bytes_ = 0;
  *ran = RunCollectives(express_group_pending_);
  CountOne(express_groups_);
  return true;
}

void Engine::BuildFastMessage(uint32_t id, const Request& r, const void* data) {
  const size_t bytes = static_cast<size_t>(r.count) * DataTypeSize(r.dtype);
  std::string& msg = fast_msg_;
  // A loop's next call of the same tensor: only the data differs. (`r`
  // equals entry `id`, as it did when the message was built; an entry
  // unchanged since, by the cache's generation, is the same name and
  // size.)
  if (FastMessageFor(id)) {
    CopyBytes(msg.data() + fast_data_at_, data, bytes);
    express_at_ = fast_data_at_;
    return;
  }
  fast_msg_id_ = id;
  fast_msg_generation_ = cache_.generation();
  msg.clear();
  CachedIds bits;
  bits.insert(id);
  PutMessageHead(msg, kRunning, bits.bits(), {});
  PutValue<uint32_t>(msg, 1);  // one small tensor
  express_at_ = PutEager(
      msg, r.name, std::string_view(static_cast<const char*>(data), bytes));
  fast_data_at_ = express_at_;
  PutKnobs(msg, std::nullopt);
}

bool Engine::FastStillClear(uint32_t id) {
  // The checks under mu_ passed for this tensor (entry `id`, unchanged
  // since: fast_name_ is its name) when queued_ was fast_quiet_at_.
  // Whatever could fail them since (a request queued, so pending and
  // holding its name; a stop; a failure) moved queued_.
  if (!fast_clear_ || !FastMessageFor(id)) return false;
  // A submitter of the same name counts itself before it looks at the
  // flag (AddLocked): either it sees the flag and is refused, or this
  // sees its count and takes mu_, as both did under mu_.
  fast_busy_.store(true, std::memory_order_seq_cst);
  if (queued_.load(std::memory_order_seq_cst) == fast_quiet_at_) return true;
  fast_busy_.store(false, std::memory_order_relaxed);
  fast_clear_ = false;
  return false;
}

CycleDriver::Turn Engine::FastTurn(const Request& r, uint64_t stamp, void* data,
                                   Status* result,
                                   std::shared_ptr<Completion>* queued) {
  using Turn = CycleDriver::Turn;
  if (!cache_enabled_ || tuner_ || !negotiator_.Idle() || !my_cached_.empty() ||
      outgoing_knobs_ || (options_.timeline && options_.timeline->enabled())) {
    return Turn::kIdle;
  }
  // A loop's same tensor again: the caller's stamp says the request is the
  // one the fast lane's message was last built for, and the cache's
  // generation that its entry is unchanged (no compare at all); else its
  // entry, if still the same, spares the lookup's hash.
  const bool known =
      stamp != 0 && stamp == fast_stamp_ && FastMessageFor(fast_msg_id_);
  fast_stamp_ = 0;
  const std::optional<uint32_t> id =
      known || (cache_.Has(fast_msg_id_) && cache_.Get(fast_msg_id_) == r)
          ? std::optional<uint32_t>(fast_msg_id_)
          : cache_.Lookup(r);
  if (!id) return Turn::kIdle;
  fast_quiet_ = false;
  if (!FastStillClear(*id)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || !failed_.ok() || device_seen_ || live_ > 0 ||
        !fresh_.empty() || NameHeldLocked(r.name)) {
      return Turn::kIdle;
    }
    fast_quiet_at_ = queued_.load(std::memory_order_relaxed);
    // A second submission of it is refused meanwhile.
    if (fast_name_ != r.name) fast_name_ = r.name;
    fast_busy_.store(true, std::memory_order_relaxed);
    fast_clear_ = true;
  }
  BuildFastMessage(*id, r, data);
  fast_stamp_ = stamp;  // the message is entry *id's, as `r` is
  // Recorded in the flight recorder as soon as the peers keep this rank
  // waiting (a rank stuck there shows what it waits on in a dump), else
  // once done, in one go.
  ControlPlane::Timed timed;
  timed.keeps_mine = true;  // fast_msg_ stands for it (a copy fewer)
  struct Waiting {
    Engine* engine;
    const Request* request;
    const ControlPlane::Timed* timed;
    uint64_t flight = 0;
  } waiting{this, &r, &timed};
  timed.arg = &waiting;
  timed.waiting = [](void* arg) {
    Waiting& w = *static_cast<Waiting*>(arg);
    w.flight = w.engine->flight_.Submitted(*w.request, w.timed->sent);
  };
  merged_ = nullptr;
  Status s = control_->TimedExchange(fast_msg_, &cycle_messages_, &timed);
  if (s.ok()) merged_ = control_->MergedGroups();
  if (!s.ok() || !SameButData(fast_msg_)) {
    return FallBackFromFast(r, data, *id, s, timed, waiting.flight, queued);
  }
  FinishFast(r, data, *id, timed, waiting.flight);
  fast_quiet_ = true;
  *result = Status::Ok();
  return Turn::kRan;
}

void Engine::FinishFast(const Request& r, void* data, uint32_t id,
                        const ControlPlane::Timed& timed, uint64_t flight) {
  const size_t data_bytes = ExpressViews(fast_msg_);
  cycle_bytes_ = executor_.ReduceEager(r, data, express_views_);
  // No clock read of its own: the exchange carried the data, so the
  // call's whole time is both its negotiation and its transfer (the
  // reduction of a few KiB after it is a small part).
  const double took =
      std::chrono::duration<double>(timed.came - timed.sent).count();
  cache_.Touch(id);
  if (flight != 0) {
    flight_.Ran(flight, timed.sent, timed.came);
  } else {
    flight_.Completed(r, timed.sent, timed.came);
  }
  fast_busy_.store(false, std::memory_order_release);
  tally_->CacheLookup(true);
  tally_->Express(took, data_bytes, took, took);
  CountOne(express_);
  CountOne(fast_lane_);
}

CycleDriver::Turn Engine::FallBackFromFast(
    const Request& r, void* data, uint32_t id, const Status& exchanged,
    ControlPlane::Timed timed, uint64_t flight,
    std::shared_ptr<Completion>* queued) {
  // Not an express cycle (or the exchange failed): the request is what
  // its message said, pending by its bit, and the cycle goes on in full.
  if (timed.sent == std::chrono::steady_clock::time_point{}) {
    // A plane already broken sends nothing: timed now.
    timed.sent = timed.came = std::chrono::steady_clock::now();
  }
  if (flight == 0) flight = flight_.Submitted(r, timed.sent);
  exchanged_at_ = timed.came;
  // The cycle reads this rank's message where the exchange may have left
  // it out (keeps_mine; a plane that merged filled it, or its group's).
  cycle_messages_.resize(options_.size);
  if (merged_ == nullptr) cycle_messages_[options_.rank] = fast_msg_;
  exchange_seconds_ =
      std::chrono::duration<double>(timed.came - timed.sent).count();
  CountOne(fast_fallbacks_);
  fast_clear_ = false;  // the request is pending: the checks fail now
  auto done = std::make_shared<Completion>();
  Status refuse, gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fast_busy_.store(false, std::memory_order_relaxed);
    AddLocked(r, data, nullptr, done, refuse, gone, flight);
    // Sent already, by its bit.
    if (refuse.ok() && gone.ok()) fresh_.pop_back();
  }
  if (!refuse.ok()) {
    done->Refuse(refuse);
  } else if (!gone.ok()) {
    done->Set(gone);
  } else {
    my_cached_.insert(id);
  }
  *queued = done;
  if (!exchanged.ok()) return Conclude(exchanged, kRunning);
  uint8_t everyone = kRunning;
  const Status ran = NegotiateAndRun(&everyone);
  return Conclude(ran, everyone);
}

Status Engine::AllreduceNow(const Request& request, void* data,
                            uint64_t stamp) {
  const size_t bytes =
      static_cast<size_t>(std::max<int64_t>(request.count, 0)) *
      DataTypeSize(request.dtype);
  if (options_.size > 1 && request.type == OpType::kAllreduce &&
      request.device < 0 && !request.adasum &&
      bytes <= options_.eager_tensor_bytes &&
      bytes <= options_.eager_cycle_bytes &&
      (data != nullptr || request.count == 0)) {
    // Not validated here: the fast lane takes only a request equal to one
    // the response cache holds, which was validated when it was queued;
    // any other is queued below, and Enqueue validates it.
    if (request.shape.empty()) {
      // As the queue would give it (the cache keys on the shape).
      Request shaped = request;
      shaped.shape = {request.count};
      return AllreduceNow(shaped, data);
    }
    Status result;
    std::shared_ptr<Completion> queued;
    bool drives = false;
    if (driver_.TryTurn(
            [&] {
              const CycleDriver::Turn t =
                  FastTurn(request, stamp, data, &result, &queued);
              drives = queued != nullptr;
              return t;
            },
            &drives)) {
      return queued ? Wait(queued, /*notified=*/false) : result;
    }
  }
  return Wait(Enqueue(request, data, nullptr, /*notify=*/false),
              /*notified=*/false);
}

}  // namespace hvd::runtime
