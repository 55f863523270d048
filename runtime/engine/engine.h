// The engine: one background thread per process that turns named,
// asynchronous requests into few large collectives.
//
// Protocol (every cycle, on every rank, in lockstep):
//   1. Sleep until this rank has something new (a request, a shutdown) or
//      a peer has started a cycle; either starts the cycle at once, and
//      the exchange itself waits for the slower ranks. Whatever arrives
//      meanwhile goes out together in the next cycle. An idle job
//      exchanges nothing: no heartbeat steals the CPU from training.
//   2. Negotiate: one exchange on the control plane gives every rank every
//      rank's message: a stop reason, the bits of its pending tensors that
//      the response cache knows, its other new requests in full (name and
//      metadata, in submission order), and the data of its small pending
//      allreduces. Horovod sends the lists to rank 0, which answers; an
//      all-to-all exchange gives every rank the same information in one
//      round, and every rank then runs the same deterministic decision, so
//      no answer has to travel back.
//   3. Decide: a tensor is ready when every rank has named it (a rank that
//      joined counts as having named every tensor). Its metadata (op,
//      dtype, shape, reduce op, scale factors, root, device) must agree
//      across ranks; a mismatch completes it everywhere with an error
//      naming the tensor and ranks.
//   4. A small allreduce whose data every rank sent along is reduced
//      locally, in rank order, so every rank gets the same bits without a
//      collective. The rest: consecutive ready allreduces with the same
//      dtype, reduce op, scale factors and device share one buffer up to
//      the fusion threshold and one backend call. Fusion never reorders:
//      every rank fuses the same list.
//   5. Execute on the backend of the tensor's device, scale, copy out,
//      complete the handles.
// Join: a rank that calls join has no more data; until every rank has
// joined, the others' allreduces run with zeros from it, and join completes
// everywhere with the last rank to join. Other ops fail while a rank has
// joined.
// A failure (dead peer, timeout) completes every pending and every later
// request with that error; nothing waits forever. When any rank shuts
// down, the others' pending requests complete with an error saying so.
//
// Who runs a cycle: the engine thread, or a caller waiting on its request
// (Wait). A waiting caller takes the cycle lock (after the cycle another
// thread is running, if any) and runs the cycles itself until its request
// completes, so a small collective costs no hand-off between threads (no
// system call when the peers' callers drive too); the engine thread sleeps
// meanwhile and takes over when the caller leaves with work left, or when
// the caller cannot drive (paced cycles, GPU tensors, a control plane that
// cannot tell whether a peer waits).
//
// Thread-safety: Enqueue and Wait may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/settings.h"
#include "common/single_writer.h"
#include "common/status.h"
#include "hvd/hvd.h"
#include "runtime/autotune.h"
#include "runtime/backend.h"
#include "runtime/backend_set.h"
#include "runtime/control_plane.h"
#include "runtime/dtype.h"
#include "runtime/engine/cycle_driver.h"
#include "runtime/engine/eager_merge.h"
#include "runtime/engine/engine_options.h"
#include "runtime/engine/executor.h"
#include "runtime/engine/flight_recorder.h"
#include "runtime/engine/negotiator.h"
#include "runtime/engine/pending.h"
#include "runtime/engine/request.h"
#include "runtime/engine/response_cache.h"
#include "runtime/engine/stall_inspector.h"
#include "runtime/metrics.h"

namespace hvd::runtime {

class Timeline;

class Engine : private CycleDriver::Cycles {
 public:
  // Neither is owned; both outlive the engine.
  Engine(EngineOptions options, BackendSet* backends, ControlPlane* control);
  ~Engine();  // shuts down if Shutdown was not called

  // Queues `request` on `data` (in place; count elements of dtype). The
  // buffer must stay valid until the completion is done. Allgather,
  // alltoall and reducescatter read `data` and fill `*out` (resized, with
  // its shape).
  // `notify`: wake the engine thread now; a caller about to Wait may pass
  // false (Wait then wakes it if the caller cannot drive). `done`: the
  // completion to use (a handle's, allocated with it); a new one if null.
  std::shared_ptr<Completion> Enqueue(Request request, void* data,
                                      Output* out = nullptr, bool notify = true,
                                      std::shared_ptr<Completion> done = {});

  // Waits for `done` (a completion of this engine), running the cycles on
  // the calling thread when it can. `notified`: Enqueue woke the engine
  // thread.
  Status Wait(const std::shared_ptr<Completion>& done, bool notified = true);
  // Cycles run by waiting callers rather than the engine thread.
  uint64_t cycles_by_callers() const { return driver_.cycles_by_callers(); }
  // Allreduces completed by express cycles (express.cc), and of those the
  // fast lane's; fast-lane turns whose cycle was not an express one.
  uint64_t express_allreduces() const { return express_.load(); }
  uint64_t fast_lane_allreduces() const { return fast_lane_.load(); }
  uint64_t fast_lane_fallbacks() const { return fast_fallbacks_.load(); }
  // Express cycles of cached tensors without their data (ExpressGroup).
  uint64_t express_groups() const { return express_groups_.load(); }

  // A blocking host allreduce: through the fast lane when this rank has
  // nothing else in flight and the tensor is in the response cache (its
  // cycle runs straight from this call, see express.cc), else queued and
  // waited for as any request. `stamp` (0: none) names the request's
  // content: a caller passes the same stamp only for the same request
  // (every field), and never one it passed for another, so the fast lane
  // may skip comparing a request it checked last time.
  Status AllreduceNow(const Request& request, void* data, uint64_t stamp = 0);

  // Queues several requests at once, so they reach the negotiation in the
  // same cycle on this rank and, when every rank groups them alike, run
  // together (fused when they allow). Results are per request, in `done`
  // when given (one per request, as Enqueue's), else new ones.
  std::vector<std::shared_ptr<Completion>> EnqueueGroup(
      std::vector<std::pair<Request, void*>> requests,
      std::vector<std::shared_ptr<Completion>> done = {});

  // This rank's last collectives (engine/flight_recorder.h).
  const FlightRecorder& flight_recorder() const { return flight_; }

  // Stops after telling the other ranks; pending requests complete with an
  // error. Idempotent.
  void Shutdown();

  // Serialization of negotiation messages (exposed for tests).
  static std::string Encode(uint8_t stop, const std::vector<Request>& reqs);
  static StatusOr<std::vector<Request>> Decode(const std::string& bytes,
                                               uint8_t* stop);

 private:
  // Stop reasons carried by the negotiation's shutdown byte.
  enum StopReason : uint8_t { kRunning = 0, kShutdown = 1, kStalled = 2 };

  // Why `request` cannot be queued (OK when it can); `mu_` not held.
  Status Validate(const Request& request, void* data, Output* out) const;
  // Queues or refuses under `mu_`.
  // `refuse`: the arguments are refused; `gone`: the engine failed or
  // stopped, so the operation fails without running. `flight`: its flight
  // recorder entry when it has one already (the fast lane's), else 0.
  void AddLocked(Request request, void* data, Output* out,
                 const std::shared_ptr<Completion>& done, Status& refuse,
                 Status& gone, uint64_t flight = 0);
  // A name stays taken until its result is collected (Completion), not
  // only while it is in flight: a program that submits a name again
  // before collecting the first is refused every time, however fast the
  // first completed. (`mu_` held.)
  bool NameHeldLocked(const std::string& name) const;
  static bool Holds(const Pending& p);
  // Whether the fast lane's call of `name` is in flight (`mu_` held).
  bool FastNameLocked(const std::string& name) const;
  // Whether the fast lane's checks under mu_ still hold for cache entry
  // `id` (nothing queued since they passed), its flag then set.
  bool FastStillClear(uint32_t id);
  // `ready` is set once the thread is named and bound.
  void Loop(std::promise<void>* ready);
  // What the cycle driver asks (CycleDriver::Cycles; each takes `mu_`):
  // whether this rank has something for a cycle of its own (new requests,
  // or a shutdown to announce), what is pending and not yet sent, whether
  // the engine stops.
  bool Due() override;
  bool HasPending() override;
  bool Unfinished() override;
  size_t Fresh() override;
  bool Stopping() override;
  // One turn, cycle lock held: runs a cycle when one is due (`peer`: a
  // peer has started one). `driver`: the caller is a waiting caller, which
  // leaves GPU tensors to the engine thread (the CUDA device is per
  // thread).
  CycleDriver::Turn TakeTurn(bool peer, bool driver) override;
  // `n` pending allreduces completed; when none is left, the time since
  // the first of them was queued goes to the metrics (`mu_` held).
  void AllreducesDoneLocked(int n, std::chrono::steady_clock::time_point now =
                                       std::chrono::steady_clock::now());
  // executor_.Run, with the group's bytes and time added to the metrics.
  StatusOr<uint64_t> RunMeasured(const std::vector<Pending*>& group);
  // `*handed_off`: a driver found GPU work and ran nothing.
  Status RunCycle(uint8_t stop, uint8_t* everyone_stop, bool driver,
                  bool* handed_off);
  // The cycle after its exchange: decode, negotiate, execute, tune.
  Status NegotiateAndRun(uint8_t* everyone_stop);
  // What a turn that ran a cycle ends with: a failure or a stop every
  // rank agreed on fails what is pending and ends the cycles.
  CycleDriver::Turn Conclude(const Status& s, uint8_t everyone);
  // The tensors pending past the warning time, with their missing ranks.
  std::string StallReport(std::chrono::steady_clock::time_point now,
                          bool* past_shutdown) const;
  // This cycle's negotiation message, and the small tensors' data in it.
  std::string BuildMessage(uint8_t stop,
                           const std::vector<const Request*>& uncached);
  // The cycle's phases (cycle.cc). Requests the cache knows only set
  // their bit; the rest, returned, travel in full.
  std::vector<const Request*> SplitCached(const std::vector<Pending*>& mine);
  // The cache's id of `p`'s request, if it holds it: from the id the
  // name's entry found last time while the cache is unchanged (no hash),
  // else looked up.
  std::optional<uint32_t> CachedIdOf(Pending& p);
  // Sends this rank's message; every rank's lands in cycle_messages_.
  Status ExchangeMessages(uint8_t stop,
                          const std::vector<const Request*>& uncached);
  // Every rank's offer, the highest stop reason and rank 0's knobs from
  // the messages.
  Status ReadOffers(uint8_t* everyone_stop, std::vector<RankOffer>* offers,
                    std::optional<Knobs>* knobs);
  // The steady state's shortcut (express.cc): when every rank's message is
  // this rank's but for the data (one cached allreduce, its data along,
  // nothing else) and nothing is half-negotiated, completes it as the
  // negotiation would, without one. False: the cycle goes on in full.
  // Otherwise (`ran`: the cycle's outcome when it did) the same for a
  // cycle whose every message names the same cached tensors and nothing
  // else: they run as the negotiation would have ordered them
  // (ExpressGroup).
  bool TryExpress(Status* ran);
  bool ExpressGroup(Status* ran);
  // Whether every rank's message of this cycle equals this rank's (`mine`)
  // but for the data from express_at_ on.
  bool SameButData(const std::string& mine) const;
  // Points express_views_ at every group's data in this cycle's messages
  // (this rank's in `mine` where nothing merged); the data's size.
  size_t ExpressViews(const std::string& mine);
  // Whether rank q's entry of cycle_messages_ holds a message: its own,
  // or its group's where messages merged on the way (eager_merge.h).
  bool Leads(int q) const { return merged_ == nullptr || (*merged_)[q] == q; }
  // The fast lane's turn (express.cc), under the cycle lock: kIdle when it
  // does not apply. Otherwise `*result` is the allreduce's, or `*queued`
  // the request's completion when the cycle turned out not to be express
  // and it became an ordinary pending request of that cycle.
  CycleDriver::Turn FastTurn(const Request& r, uint64_t stamp, void* data,
                             Status* result,
                             std::shared_ptr<Completion>* queued);
  // The message a cycle sends for one cached allreduce (`id`) of `data`
  // and nothing else, into fast_msg_ (express_at_ set).
  void BuildFastMessage(uint32_t id, const Request& r, const void* data);
  // FastTurn's ends: the allreduce reduced from the express cycle's data
  // (`flight`: its record if the wait made one); or the request pending
  // in the full cycle that follows.
  void FinishFast(const Request& r, void* data, uint32_t id,
                  const ControlPlane::Timed& timed, uint64_t flight);
  CycleDriver::Turn FallBackFromFast(const Request& r, void* data, uint32_t id,
                                     const Status& exchanged,
                                     ControlPlane::Timed timed, uint64_t flight,
                                     std::shared_ptr<Completion>* queued);
  // Requests this rank had pending through a dropped cache entry go again
  // in full.
  void ResendDropped(const Negotiation& round);
  // Every rank has joined: the join completes.
  void CompleteJoins();
  // Completes what the negotiation agreed on: errors, barriers and small
  // allreduces at once, then the rest in the fusion planner's groups.
  Status Execute(std::vector<Agreed>& ready);
  // Runs `collective` (agreed, in order) in the fusion planner's groups.
  Status RunCollectives(const std::vector<Pending*>& collective);
  Status ExecuteFused(const std::vector<Pending*>& group);
  // Reduces a small allreduce from the data every rank sent along; false
  // when some rank did not send it.
  bool TryEager(Pending* p);
  // Completes a group that ran, and caches its requests.
  void Finish(const std::vector<Pending*>& group);
  void FailAll(const Status& s);
  // Adds a completed request to the cache; requeues a pending request of
  // this rank whose entry it evicted. Whether it evicted one.
  bool Remember(const Request& r);

  const EngineOptions options_;
  // Tunable (by the cycle's runner): starts from the options, autotune
  // moves it (and the driver's cycle time).
  size_t fusion_threshold_;
  std::unique_ptr<Autotuner> tuner_;  // rank 0 with --autotune
  std::optional<Knobs> outgoing_knobs_;
  uint64_t cycle_bytes_ = 0;  // allreduced this cycle
  bool cache_enabled_;        // autotune may switch the response cache
  // Every rank at the same cycle: drops the cache, and sends what this
  // rank had pending through it in full.
  void SetCacheEnabled(bool on);
  // After a cycle (tune.cc): every rank applies rank 0's chosen
  // values; rank 0's tuner scores the cycle.
  Status ApplyKnobs(const Knobs& knobs);
  void TuneAfterCycle();
  void WriteAutotuneLog();
  BackendSet* backends_;
  ControlPlane* control_;
  std::mutex mu_;
  // Guarded by mu_: not yet sent; each a live entry of names_ (an entry
  // stops being live only at the cycle's runner, after fresh_ was taken,
  // or with it in FailAll).
  std::vector<Pending*> fresh_;
  // Every name this rank submitted, pending or not (guarded by mu_): while
  // pending, its request (Pending::live); after, until its result is
  // collected, its hold on the name. A submission finds both with one
  // hash, and a step's tensors reuse last step's entries: a steady loop
  // allocates and frees no node. Entries of collected results are dropped
  // now and then (HoldLocked), so a program naming every step anew does
  // not grow it. Hashed, not ordered: a step's tensors are found here
  // several times each, and string compares down a tree cost more than
  // the hash (fused 64-tensor step).
  std::unordered_map<std::string, Pending> names_;
  size_t live_ = 0;       // entries of names_ pending (guarded by mu_)
  size_t prune_at_ = 64;  // guarded by mu_
  // The pending entry of `name`, or null (`mu_` held).
  Pending* FindPendingLocked(const std::string& name);
  // `p` is pending no more (`mu_` held); its completion taken already.
  void EndPendingLocked(Pending& p);
  // Takes `name`'s entry for a new request completing `done`: null (and
  // nothing changes) when the name is still held.
  Pending* HoldLocked(const std::string& name,
                      const std::shared_ptr<Completion>& done);
  // Allreduces pending, and since when one has been (guarded by mu_):
  // the time a rank waits on allreduces, for the metrics.
  int allreduces_pending_ = 0;
  std::chrono::steady_clock::time_point allreduce_since_;
  bool stop_ = false;  // guarded by mu_
  // Requests queued (or refused as in flight), stops asked and failures,
  // ever: moved under mu_, so that a fast-lane turn that found nothing
  // pending can tell, without mu_, that nothing came since (Unfinished,
  // FastStillClear). One it cannot see yet was queued by a submitter that
  // wakes the engine thread or waits (and drives) itself.
  std::atomic<uint64_t> queued_{0};
  void CountQueuedLocked() {
    SingleWriterAdd<uint64_t>(queued_, 1, std::memory_order_seq_cst);
  }
  // A GPU tensor was ever queued (guarded by mu_): callers drive no more.
  bool device_seen_ = false;
  Status failed_;  // guarded by mu_
  // Who runs the cycles, and when.
  CycleDriver driver_;
  // Only the cycle's runner touches these:
  Negotiator negotiator_;
  Executor executor_;
  ResponseCache cache_;
  // Merges the ranks' small-tensor data on the way, where the plane can;
  // the last exchange's groups (null: none merged).
  EagerMerger merger_{cache_};
  const std::vector<int>* merged_ = nullptr;
  FlightRecorder flight_;
  CachedIds my_cached_;  // cache ids this rank has pending
  // By cache id, the entry this rank sent by that id in the cycle
  // numbered `serial` (SplitCached): live until this runner ends it, so an
  // express group of this cycle's tensors finds each without a hash.
  struct CachedNow {
    Pending* pending = nullptr;
    uint64_t serial = 0;
  };
  std::vector<CachedNow> cached_now_;
  uint64_t cycle_serial_ = 0;
  std::map<std::string, Pending> placeholders_;
  // This cycle's messages, by rank (a merged group's in its first rank's
  // entry: Leads).
  std::vector<std::string> cycle_messages_;
  std::string cycle_mine_;  // this rank's (its buffer reused)
  // Where the data starts in this cycle's message when it is express-
  // shaped (one cached allreduce with its data, nothing else); 0 when not.
  size_t express_at_ = 0;
  bool express_group_ = false;  // ... at the message's end, with no data
  std::vector<uint32_t> express_ids_;
  std::vector<Pending*> express_group_pending_;
  std::vector<const Request*> planned_;  // RunCollectives' list, reused
  std::vector<const Pending*> eager_candidates_;     // BuildMessage's, reused
  std::vector<std::optional<uint32_t>> finish_ids_;  // Finish's, reused
  // When this cycle's exchange ended (what follows is timed from it).
  std::chrono::steady_clock::time_point exchanged_at_;
  double exchange_seconds_ = -1;  // its time, when the metrics take it
  std::vector<std::string_view> express_views_;
  std::string fast_msg_;  // the fast lane's message (its buffer reused)
  // ... whose tensor it was built for (its data at fast_data_at_)
  // (entry fast_msg_id_ of the cache at fast_msg_generation_).
  uint32_t fast_msg_id_ = UINT32_MAX;
  uint64_t fast_msg_generation_ = 0;
  size_t fast_data_at_ = 0;
  bool FastMessageFor(uint32_t id) const {
    return id == fast_msg_id_ && cache_.generation() == fast_msg_generation_;
  }
  // The caller's stamp of the request fast_msg_ was last built for (0:
  // none), so a loop's next call of it needs no compare (AllreduceNow).
  uint64_t fast_stamp_ = 0;
  // The fast lane's last turn found nothing pending, and queued_ was
  // fast_quiet_at_ then (the cycles' runner's).
  bool fast_quiet_ = false;
  uint64_t fast_quiet_at_ = 0;
  // ... and its checks under mu_ passed then for the tensor of its
  // message (until a fallback queues the request).
  bool fast_clear_ = false;
  // The fast lane's tensor while fast_busy_: both set under mu_; the flag
  // is cleared without it, as the call returns (a submission of the name
  // that races with the return may be refused, as it would be just before).
  std::string fast_name_;
  std::atomic<bool> fast_busy_{false};
  // Counted only by the thread running the cycles (SingleWriterAdd), read
  // by any.
  std::atomic<uint64_t> express_{0}, fast_lane_{0}, fast_fallbacks_{0},
      express_groups_{0};
  static void CountOne(std::atomic<uint64_t>& c) {
    SingleWriterAdd<uint64_t>(c, 1);
  }
  // This cycle's small-tensor data: name -> each group's bytes, in rank
  // order (views into cycle_messages_).
  std::map<std::string, std::vector<std::string_view>> eager_;
  // The express cycles' metrics (written by the cycles' runner, no lock).
  Metrics::CycleTally* const tally_;
  StallInspector stall_;  // rank 0's
  std::thread thread_;
};

}  // namespace hvd::runtime
