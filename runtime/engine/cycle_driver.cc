#include "runtime/engine/cycle_driver.h"

#include <algorithm>
#include <thread>

#include "common/single_writer.h"

namespace hvd::runtime {

CycleDriver::Turn CycleDriver::TakeTurnLocked(bool peer, bool driver) {
  const Turn t = cycles_.TakeTurn(peer, driver);
  if (t == Turn::kRan || t == Turn::kEnded) ++cycles_run_;
  if (t == Turn::kEnded) ended_ = true;
  return t;
}

void CycleDriver::Loop() {
  uint64_t seen = 0;  // cycles_run_ when this thread last took a turn
  // This rank's callers ran cycles since this thread's last turn: a peer's
  // exchange is theirs to join unless the peer rings (it gave up on them).
  bool callers_drive = false;
  for (;;) {
    bool peer = false;
    if (!cycles_.Due()) {
      // Sleep until something is new here or a peer starts a cycle; wake
      // every 100 ms for the stall inspector (whose times are seconds).
      const auto most = std::chrono::milliseconds(100);
      if (callers_drive) {
        control_.WaitForCaller(most, &peer);
      } else {
        control_.Wait(most, &peer);
      }
    }
    // (Measured to help on shared memory, fused step 540 -> 425 us; over
    // TCP, whose exchange blocks on the peer, it did not.)
    if (!peer && cycle_time_.count() == 0 && control_.Drivable()) {
      LetBurstFinish();
    }
    std::unique_lock<std::mutex> cycle(cycle_mu_);
    const bool callers_ran = cycles_run_ != seen && control_.Drivable();
    if (peer && callers_ran && !callers_drive) {
      // Woken by a peer's exchange while this rank's callers run the
      // cycles: the next one is theirs to join. Answering it here would
      // send this rank's message before its caller's request is in it,
      // and the cycle after would have to finish the job.
      callers_drive = true;
      continue;
    }
    // A caller may have run the cycle the peer started meanwhile: ask
    // again rather than start one nobody else does. (A dead peer is also
    // a reason; it stands when no caller ran a cycle.)
    if (peer && callers_ran) peer = control_.PeerWaiting();
    callers_drive = callers_ran;
    if (ended_ || TakeTurnLocked(peer, /*driver=*/false) == Turn::kEnded) {
      return;
    }
    seen = cycles_run_;
  }
}

void CycleDriver::Drive(const std::function<bool()>& finished, bool notified) {
  if (!control_.Drivable()) {
    if (!notified) control_.Notify();
    return;
  }
  // When the engine thread is in a cycle (a peer's exchange woke it), wait
  // for that cycle rather than for the request: the thread then goes back
  // to sleep and the callers drive again.
  std::unique_lock<std::mutex> cycle(cycle_mu_);
  if (ended_ || cycle_time_.count() > 0) {
    cycle.unlock();
    if (!notified) control_.Notify();
    return;
  }
  control_.SetDriving(true);
  bool running = true;
  while (running && !finished()) {
    // Waiting for a peer: a short spin, then the engine thread's sleep.
    if (!cycles_.Due() && !control_.PeerWaiting() && !control_.AwaitPeer()) {
      break;
    }
    const Turn t = TakeTurnLocked(true, /*driver=*/true);
    if (t == Turn::kRan || t == Turn::kEnded) {
      SingleWriterAdd<uint64_t>(cycles_by_callers_, 1);
    }
    running = t == Turn::kIdle || t == Turn::kRan;
    if (t == Turn::kHandOff) break;
  }
  control_.SetDriving(false);
  // Work left for the engine thread: this rank's, or a peer's exchange
  // whose ring found the flag still set.
  const bool owed =
      running && (cycles_.Unfinished() || control_.PeerRangWhileDriving());
  cycle.unlock();
  if (owed) control_.Notify();
}

bool CycleDriver::BeginTurn(std::unique_lock<std::mutex>& cycle) {
  if (!control_.Drivable()) return false;
  // After the cycle another thread is running, if any (as Drive waits).
  cycle.lock();
  // The driving flag is left alone: a turn is one cycle, and a peer only
  // rings after it waited far longer than one (see TryTurn).
  return !ended_ && cycle_time_.count() == 0;
}

bool CycleDriver::EndTurn(Turn t, const bool* then_drives,
                          std::unique_lock<std::mutex>& cycle) {
  if (t == Turn::kRan || t == Turn::kEnded) {
    ++cycles_run_;
    SingleWriterAdd<uint64_t>(cycles_by_callers_, 1);
  }
  if (t == Turn::kEnded) ended_ = true;
  // As Drive leaves: work for the engine thread (no ring was held back).
  const bool owed = t == Turn::kRan && !*then_drives && cycles_.Unfinished();
  cycle.unlock();
  if (owed) control_.Notify();
  return t != Turn::kIdle;
}

void CycleDriver::Pace() {
  const auto due = last_cycle_start_ + cycle_time_;
  for (auto now = std::chrono::steady_clock::now(); now < due;
       now = std::chrono::steady_clock::now()) {
    if (cycles_.Stopping()) break;
    // In slices, so a shutdown is not held up by a long cycle time.
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
        due - now, std::chrono::milliseconds(10)));
  }
  last_cycle_start_ = std::chrono::steady_clock::now();
}

void CycleDriver::LetBurstFinish() {
  using std::chrono::microseconds;
  // Submitting a request takes a microsecond or two; a burst's requests
  // come closer than the gap. The bound keeps a steady trickle from
  // holding the cycle back.
  constexpr microseconds kGap(10), kMost(200);
  const auto start = std::chrono::steady_clock::now();
  size_t seen = cycles_.Fresh();
  for (;;) {
    if (waiting_.load(std::memory_order_relaxed) > 0) return;
    // Sleeping, not spinning: the submitter may need this CPU.
    std::this_thread::sleep_for(kGap);
    const size_t fresh = cycles_.Fresh();
    if (cycles_.Stopping() || fresh == seen ||
        std::chrono::steady_clock::now() - start >= kMost) {
      return;
    }
    seen = fresh;
  }
}

}  // namespace hvd::runtime
