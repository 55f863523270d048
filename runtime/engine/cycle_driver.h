// Who runs the engine's cycles, and when. The engine thread sleeps until
// this rank has something new or a peer starts a cycle, then takes a turn
// (Loop). A caller waiting on its request takes the turns itself while the
// cycle lock is free (Drive), so a small collective costs no hand-off
// between threads; it leaves them to the engine thread when it cannot
// (paced cycles, a control plane that cannot tell whether a peer waits, a
// turn that hands off). Cycles on demand first let a burst of submissions
// finish; paced cycles (HOROVOD_CYCLE_TIME) start at least the cycle time
// apart.
//
// The driver knows the engine only as `Cycles` and the control plane's
// waiting calls, so it is tested alone (cycle_driver_test).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>

#include "runtime/control_plane.h"

namespace hvd::runtime {

class CycleDriver {
 public:
  enum class Turn {
    kIdle,     // nothing was due: no cycle ran
    kRan,      // a cycle ran; more may follow
    kHandOff,  // a waiting caller found work for the engine thread
    kEnded,    // a cycle ran and the cycles are over (stop, failure)
  };

  // What the driver needs of the engine.
  class Cycles {
   public:
    virtual ~Cycles() = default;
    // This rank has something to send: new requests, a shutdown.
    virtual bool Due() = 0;
    // Requests queued and not yet complete.
    virtual bool HasPending() = 0;
    // HasPending() or Due(): work the engine thread must see to when a
    // caller stops driving (an engine answers it under one lock).
    virtual bool Unfinished() { return HasPending() || Due(); }
    // Requests queued and not yet sent (a burst grows it).
    virtual size_t Fresh() = 0;
    // The engine is stopping: no pause may hold it up.
    virtual bool Stopping() = 0;
    // One turn, the cycle lock held: a cycle when one is due or `peer`
    // started one. `driver`: the turn is a waiting caller's.
    virtual Turn TakeTurn(bool peer, bool driver) = 0;
  };

  // Neither is owned; both outlive the driver.
  CycleDriver(Cycles& cycles, ControlPlane& control,
              std::chrono::microseconds cycle_time)
      : cycles_(cycles), control_(control), cycle_time_(cycle_time) {}

  // The engine thread's loop; returns once the cycles have ended.
  void Loop();

  // A caller waits until `finished` (its request completed): runs the
  // turns itself while it may, else makes sure the engine thread will.
  // `notified`: the engine thread was woken when the request was queued.
  void Drive(const std::function<bool()>& finished, bool notified);

  // A caller's turn of its own, before it has queued anything (the
  // engine's fast lane): runs `turn` under the cycle lock (after a cycle
  // another thread is running) when cycles run on demand and the control
  // plane lets callers drive. Unlike Drive it does not set the plane's
  // driving flag: the turn is one cycle, and a peer rings only once it
  // has waited far longer than that, so holding its ring back would spare
  // nothing, while setting and clearing the flag (a fenced store, paired
  // with the ringer's) was a tenth of a small allreduce. A ring that does
  // come wakes the engine thread, which takes the cycle lock after the
  // turn.
  // False when `turn` did not run or ran no cycle (kIdle). `*then_drives`
  // (read after the turn): the caller goes on to Drive, which leaves work
  // to the engine thread itself, so this turn need not.
  // (A template: a std::function of the caller's lambda would allocate on
  // every call of the fast lane.)
  template <typename TurnFn>
  bool TryTurn(TurnFn&& turn, const bool* then_drives) {
    std::unique_lock<std::mutex> cycle(cycle_mu_, std::defer_lock);
    if (!BeginTurn(cycle)) return false;
    return EndTurn(turn(), then_drives, cycle);
  }

  // While one lives, a caller is waiting: a burst is over.
  class Waiting {
   public:
    explicit Waiting(CycleDriver& d) : d_(d) {
      d_.waiting_.fetch_add(1, std::memory_order_relaxed);
    }
    ~Waiting() { d_.waiting_.fetch_sub(1, std::memory_order_relaxed); }
    Waiting(const Waiting&) = delete;
    Waiting& operator=(const Waiting&) = delete;

   private:
    CycleDriver& d_;
  };

  // Paced cycles: sleeps until the cycle time has passed since the last
  // cycle began (or the engine stops). The turn calls it before a cycle.
  void Pace();

  // Autotune's choice, set during a turn (the cycle lock held).
  void set_cycle_time(std::chrono::microseconds t) { cycle_time_ = t; }
  std::chrono::microseconds cycle_time() const { return cycle_time_; }

  // Cycles run by waiting callers rather than the engine thread.
  uint64_t cycles_by_callers() const { return cycles_by_callers_.load(); }

 private:
  // TryTurn's halves: takes the cycle lock (false when no turn may run);
  // counts the turn, leaves the engine thread its work and lets the lock
  // go.
  bool BeginTurn(std::unique_lock<std::mutex>& cycle);
  bool EndTurn(Turn t, const bool* then_drives,
               std::unique_lock<std::mutex>& cycle);
  // A turn under the cycle lock, counted.
  Turn TakeTurnLocked(bool peer, bool driver);
  // Cycles on demand: the engine thread, woken by a submission, lets a
  // burst of them (a step's gradients, a group submitted one by one)
  // finish before it starts a cycle: it sleeps while requests keep
  // coming, until none has for a short gap (or a bound passes). A cycle
  // started on the first would run the rest in many small cycles.
  void LetBurstFinish();

  Cycles& cycles_;
  ControlPlane& control_;
  std::chrono::microseconds cycle_time_;  // 0: cycles on demand
  std::chrono::steady_clock::time_point last_cycle_start_{};
  std::atomic<int> waiting_{0};  // callers in Wait
  // Held by whoever takes a turn (the engine thread or a driving caller).
  std::mutex cycle_mu_;
  bool ended_ = false;       // guarded by cycle_mu_: no cycle runs any more
  uint64_t cycles_run_ = 0;  // guarded by cycle_mu_
  // Written under cycle_mu_ (a plain add: a locked one is a fenced
  // instruction on every call of the fast lane), read from any thread.
  std::atomic<uint64_t> cycles_by_callers_{0};
};

}  // namespace hvd::runtime
