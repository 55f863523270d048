// The TCP control plane's bells, and its engine thread's sleep on them.
// Beside each peer's frame connection the plane holds a second one, which
// carries a byte when a rank gave up waiting for the peer's callers: the
// peer's engine thread, asleep while its callers were expected to drive
// the exchange, must answer (control_plane.h, Wait). Kept apart from the
// frames so that a ring never lands in the middle of a frame's bytes.
#pragma once

#include <chrono>
#include <vector>

#include "runtime/transport/tcp/tcp_mesh.h"
#include "runtime/wake_fd.h"

namespace hvd::runtime {

// Whether a byte (or a hang-up) waits on fds[p] of any p in `peers`
// within `timeout_ms` (any thread may look).
bool AnyReadable(const std::vector<int>& peers, const std::vector<Fd>& fds,
                 int timeout_ms);

class ControlBells {
 public:
  // `bells[p]`: the bell connection to peer p (empty for ranks that are no
  // peer). `wake_fds`: sockets besides the plane's own whose bytes wake the
  // sleep and are drained there (ControlOptions::wake_fds).
  ControlBells(std::vector<int> peers, std::vector<Fd> bells,
               std::vector<int> wake_fds, int size);

  // Wakes the sleeping engine thread (any thread).
  void Notify() { wake_.Notify(); }
  // An exchange begins: each peer may be rung once in it.
  void NewExchange();
  // Wakes peer `p`'s engine thread, once per exchange.
  void Ring(int p);
  // A ring (or a hang-up) waits unread.
  bool Rang() const { return AnyReadable(peers_, bells_, 0); }
  // Sleeps until a Notify, a ring, a byte on a wake fd, a byte on a peer's
  // frame connection in `frames` (when given), or the timeout; then drains
  // the rings and wake fds. Returns whether a peer hung up its bell (it is
  // gone, and an exchange names it).
  bool Sleep(std::chrono::milliseconds timeout, const std::vector<Fd>* frames);

 private:
  const std::vector<int> peers_;
  std::vector<Fd> bells_;  // by rank
  const std::vector<int> wake_fds_;
  WakeFd wake_;
  std::vector<bool> rang_;  // this exchange's rings, by rank
  // wake_fds_ that hung up (the engine thread's, in Sleep): polling them
  // again would only spin.
  std::vector<bool> wake_gone_;
};

}  // namespace hvd::runtime
