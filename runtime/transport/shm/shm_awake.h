// Whether a shm control exchange may skip its closing fence and look at
// sleepers: no peer can be asleep on this rank's count. A peer starts
// waiting for count k only after it finished exchange k-1, which needed
// this rank's k-1, stored after every clock read of exchange k-2; and a
// peer sleeps only once it has waited kShmSpinFor. So when the store of k
// (before its `sent` stamp) came less than half that after exchange k-2's
// `came`, every peer still spins and sees it. Only timed exchanges read
// the clock: after an untimed one, or a gap in them, the fence stays.
//
// Pure logic, one per control plane, used by the one thread exchanging.
#pragma once

#include <chrono>
#include <cstdint>

#include "runtime/transport/shm/shm_segment.h"

namespace hvd::runtime {

class ShmPeersAwake {
 public:
  using Clock = std::chrono::steady_clock;

  // Timed exchange `count`: its count stored before `sent`, every peer's
  // seen at `came`. Whether every peer is certainly still spinning.
  bool Exchanged(uint32_t count, Clock::time_point sent,
                 Clock::time_point came) {
    const int parity = static_cast<int>(count & 1);
    const bool awake = came_count_[parity] == count - 2 &&
                       sent - came_at_[parity] < kShmSpinFor / 2;
    came_count_[parity] = count;
    came_at_[parity] = came;
    return awake;
  }

 private:
  // The last timed exchange of each parity, and when its peers' came.
  uint32_t came_count_[2] = {0, 0};
  Clock::time_point came_at_[2];
};

}  // namespace hvd::runtime
