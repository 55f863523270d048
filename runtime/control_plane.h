// The engine's control plane: every cycle each rank contributes one small
// message (what it has ready, the cache bits, small tensors' data) and gets
// every rank's back. It is the engine's only per-cycle cost when nothing
// large is due, so it does not go through the collective backend: Gloo's
// unbound-buffer protocol spends three one-way trips (send-ready,
// recv-ready, data) and two thread hand-offs per message, 80 us to over a
// millisecond for a few bytes on a loaded machine. Each transport has its
// own (runtime/transport/{local,shm,tcp}); the engine thread exchanges
// through it directly, spinning briefly before it sleeps.
//
// Thread-safety: one thread at a time calls Exchange (whoever runs the
// engine's cycle: its thread, or a caller waiting on a request); the engine
// thread calls Wait; any thread may call Notify and PeerWaiting.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace hvd::runtime {

class ControlPlane {
 public:
  virtual ~ControlPlane() = default;
  // Collective: sends `mine` to every other rank and fills `all` with every
  // rank's message in rank order (this rank's included). Messages may
  // differ in size. A dead peer or one silent for the timeout is an error
  // naming it; after an error every later call fails the same way.
  // `urgent`: spin before sleeping (this rank has work waiting on the
  // answer); an idle heartbeat sleeps at once, leaving the CPU to the
  // training.
  virtual Status Exchange(const std::string& mine,
                          std::vector<std::string>* all,
                          bool urgent = true) = 0;
  // An urgent exchange its caller times. Between sending and having every
  // peer's message a rank only waits, so the clock is read there: `sent`
  // once this rank's message is out, `came` in the wait (at most one read
  // before the last peer's was seen). `waiting` (if set) runs once when
  // the peers are not there after a short spin: what a rank stuck in the
  // exchange must leave behind (say, a flight record) need not cost an
  // exchange that is not stuck.
  struct Timed {
    std::chrono::steady_clock::time_point sent, came;
    void (*waiting)(void*) = nullptr;
    void* arg = nullptr;
    // The caller keeps its own message: this rank's entry of `all` may be
    // left as it was (a plane that copies it anyway does no harm).
    bool keeps_mine = false;
  };
  // Planes that cannot split their exchange read the clock and run
  // `waiting` before it, and read the clock again after.
  virtual Status TimedExchange(const std::string& mine,
                               std::vector<std::string>* all, Timed* t) {
    t->sent = std::chrono::steady_clock::now();
    if (t->waiting) t->waiting(t->arg);
    Status s = Exchange(mine, all, true);
    t->came = std::chrono::steady_clock::now();
    return s;
  }

  // Sleeps until Notify() was called (since the last Wait), a peer has
  // started the next exchange (or hung up, or died), or `timeout` passes.
  // Sets *peer when a peer is the reason.
  virtual void Wait(std::chrono::milliseconds timeout, bool* peer) = 0;
  // As Wait, while this rank's callers drive its cycles: a peer's exchange
  // that has started is no reason by itself (a caller of this rank joins
  // it); a peer that gave up waiting for one (it rings after its spin)
  // is. Planes that cannot tell wait as Wait does.
  virtual void WaitForCaller(std::chrono::milliseconds timeout, bool* peer) {
    Wait(timeout, peer);
  }
  // Wakes this rank's Wait (any thread; level-triggered: a Notify before
  // the Wait is not lost).
  virtual void Notify() = 0;

  // A caller waiting on its request may run the cycles itself (the engine
  // thread sleeps meanwhile), so a small collective costs no hand-off
  // between threads. Planes that can tell without blocking whether a peer
  // has started an exchange allow it.
  virtual bool Drivable() const { return false; }
  // Whether a peer has started an exchange this rank has not joined yet.
  virtual bool PeerWaiting() { return false; }
  // Waits briefly (spinning, or yielding on a host with more ranks than
  // CPUs) for a peer to start an exchange; false when none did.
  virtual bool AwaitPeer() { return false; }
  // While a caller drives, the peers starting an exchange need not wake
  // this rank's engine thread: the caller joins it. Cleared before the
  // caller leaves, which then looks once more (PeerWaiting).
  virtual void SetDriving(bool) {}
  // For a caller that has just stopped driving: whether a peer gave up
  // waiting for this rank meanwhile (and found its engine thread not to be
  // woken), so the engine thread must answer. Planes that cannot tell say
  // whether a peer has started an exchange.
  virtual bool PeerRangWhileDriving() { return PeerWaiting(); }

  // Merges two ranks' messages into one on the way, where the engine can
  // (a cycle of one small cached allreduce: one message, its data reduced),
  // so a plane that combines messages in steps carries one for a group of
  // ranks. Must decide from the two messages alone (and what every rank
  // holds alike), so that every rank that merges the same two merges them
  // the same: `low`'s ranks lie below `high`'s, and *out is the same bytes
  // everywhere. False: they stay apart.
  class Merger {
   public:
    virtual ~Merger() = default;
    virtual bool Merge(std::string_view low, std::string_view high,
                       std::string* out) = 0;
  };
  // The engine's merger (null: none). Planes that cannot merge ignore it.
  virtual void SetMerger(Merger*) {}
  // After an exchange in which messages merged: by rank, the lowest rank
  // of its group, whose entry of `all` holds the group's message (the
  // others' are empty, this rank's own included). Null when none merged:
  // every rank's entry is its own message.
  virtual const std::vector<int>* MergedGroups() const { return nullptr; }

  // What this rank's plane has sent over the network since it was made:
  // its exchanges, their frames (one per peer per trip) and bytes, the
  // merges it made (Merger), and the sockets it holds. Planes that use no
  // network count nothing. Read by the thread that exchanges, or once the
  // engine has stopped.
  struct Traffic {
    uint64_t exchanges = 0, frames = 0, bytes = 0, merges = 0;
    int sockets = 0;
  };
  virtual Traffic traffic() const { return {}; }
};

}  // namespace hvd::runtime
