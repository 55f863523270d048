// The engine's control plane over shared memory, for jobs whose ranks all
// share a host: a cycle's messages go through memory, not TCP loopback, so
// a small allreduce costs a few barriers instead of socket round trips.
//
// Each rank writes its message (in slot-sized rounds when it is long) into
// its slot of the current set and its length into its state, then a
// barrier, then everyone reads everyone's. A rank starting an exchange
// rings the others' bells (a futex each), which wakes their idle engines;
// a rank whose caller drives its cycles is not woken (the caller joins).
#include <linux/futex.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "runtime/transport/shm/shm_backend.h"

namespace hvd::runtime {
namespace {

class ShmControlPlane final : public ControlPlane {
 public:
  ShmControlPlane(const ShmOptions& o, std::unique_ptr<ShmSegment> seg)
      : o_(o), seg_(std::move(seg)) {}

  Status Exchange(const std::string& mine, std::vector<std::string>* all,
                  bool) override {
    if (!broken_.ok()) return broken_;
    Status s = Run(mine, all);
    if (!s.ok()) {
      broken_ = Status::Unavailable(
          "local rank " + std::to_string(o_.rank) + ": control plane",
          s.message());
    }
    return s.ok() ? s : broken_;
  }

  void Notify() override {
    notified_.store(true, std::memory_order_seq_cst);
    Ring(o_.rank);
  }

  void Wait(std::chrono::milliseconds timeout, bool* peer) override {
    *peer = false;
    ShmRankState& self = seg_->state(o_.rank);
    const uint32_t bell = self.bell.load(std::memory_order_seq_cst);
    if (notified_.exchange(false) || PeerStarted()) {
      *peer = PeerStarted();
      return;
    }
    self.bell_waiters.fetch_add(1, std::memory_order_seq_cst);
    timespec t{static_cast<time_t>(timeout.count() / 1000),
               static_cast<long>(timeout.count() % 1000) * 1000000L};
    const bool timed_out =
        ShmSegment::Futex(&self.bell, FUTEX_WAIT, bell, &t) != 0 &&
        errno == ETIMEDOUT;
    self.bell_waiters.fetch_sub(1, std::memory_order_seq_cst);
    notified_.exchange(false);
    *peer = PeerStarted();
    // A dead peer never rings: after a quiet spell, look (reading /proc is
    // too slow for every wake-up), and let an exchange name it.
    for (int q = 0; timed_out && q < o_.size && !*peer; ++q) {
      if (q != o_.rank && seg_->PeerDead(q)) *peer = true;
    }
  }

  bool Drivable() const override { return true; }
  bool PeerWaiting() override { return PeerStarted(); }
  bool AwaitPeer() override {
    return seg_->SpinUntil([this] { return PeerStarted(); },
                           std::chrono::steady_clock::now() + kShmSpinFor);
  }
  // Sequentially consistent against Ring's load of `driving` after its
  // `started` store: either the peer wakes the engine thread, or the
  // leaving caller sees the peer's exchange (PeerWaiting) and does.
  void SetDriving(bool on) override {
    seg_->state(o_.rank).driving.store(on ? 1 : 0, std::memory_order_seq_cst);
  }

 private:
  bool PeerStarted() {
    const uint32_t mine = started_.load(std::memory_order_relaxed);
    for (int q = 0; q < o_.size; ++q) {
      if (q == o_.rank) continue;
      uint32_t theirs = seg_->state(q).started.load(std::memory_order_seq_cst);
      if (static_cast<int32_t>(theirs - mine) > 0) return true;
    }
    return false;
  }

  void Ring(int q) {
    ShmRankState& s = seg_->state(q);
    s.bell.fetch_add(1, std::memory_order_seq_cst);
    if (s.driving.load(std::memory_order_seq_cst) == 0 &&
        s.bell_waiters.load(std::memory_order_seq_cst) > 0) {
      ShmSegment::Futex(&s.bell, FUTEX_WAKE, INT32_MAX, nullptr);
    }
  }

  uint8_t* Slot(int set, int rank) {
    return seg_->data() +
           (static_cast<size_t>(set) * o_.size + rank) * o_.slot_bytes;
  }

  Status Run(const std::string& mine, std::vector<std::string>* all) {
    const int n = o_.size;
    const uint32_t started = started_.fetch_add(1) + 1;
    seg_->state(o_.rank).started.store(started, std::memory_order_seq_cst);
    // A peer whose caller is about to drive comes by itself: it gets the
    // spin time to show up before its engine thread is woken (a wake-up
    // costs more than the wait, and the woken thread would take the cycle
    // from that caller).
    const auto until = std::chrono::steady_clock::now() + kShmSpinFor;
    for (int q = 0; q < n; ++q) {
      if (q == o_.rank) continue;
      ShmRankState& s = seg_->state(q);
      seg_->SpinUntil(
          [&] {
            return s.driving.load(std::memory_order_seq_cst) != 0 ||
                   static_cast<int32_t>(
                       s.started.load(std::memory_order_seq_cst) - started) >=
                       0;
          },
          until);
      Ring(q);
    }
    all->assign(n, std::string());
    std::vector<uint64_t> lengths(n, 0);
    const size_t slot = o_.slot_bytes;
    for (size_t off = 0, round = 0;; off += slot, ++round) {
      const int set = static_cast<int>(set_counter_++ & 1);
      if (round == 0) {
        seg_->state(o_.rank).length[set].store(mine.size(),
                                               std::memory_order_relaxed);
      }
      if (off < mine.size()) {
        std::memcpy(Slot(set, o_.rank), mine.data() + off,
                    std::min(slot, mine.size() - off));
      }
      HVD_RETURN_IF_ERROR(seg_->Barrier("control exchange"));
      uint64_t longest = 0;
      for (int q = 0; q < n; ++q) {
        if (round == 0) {
          lengths[q] =
              seg_->state(q).length[set].load(std::memory_order_relaxed);
          (*all)[q].reserve(lengths[q]);
        }
        longest = std::max(longest, lengths[q]);
        if (q != o_.rank && off < lengths[q]) {
          (*all)[q].append(reinterpret_cast<const char*>(Slot(set, q)),
                           std::min<uint64_t>(slot, lengths[q] - off));
        }
      }
      if (off + slot >= longest) break;
    }
    (*all)[o_.rank] = mine;
    return Status::Ok();
  }

  const ShmOptions o_;
  std::unique_ptr<ShmSegment> seg_;
  std::atomic<bool> notified_{false};
  // Exchanges this rank started; read by PeerStarted from any thread.
  std::atomic<uint32_t> started_{0};
  uint64_t set_counter_ = 0;
  Status broken_;
};

}  // namespace

StatusOr<std::unique_ptr<ControlPlane>> CreateShmControlPlane(
    const ShmOptions& o, Store& store) {
  ShmOptions fixed = o;
  fixed.slot_bytes = ShmRoundUp(std::max<size_t>(o.slot_bytes, 4096));
  HVD_ASSIGN_OR_RETURN(
      std::unique_ptr<ShmSegment> seg,
      ShmSegment::Map(fixed, store, "shmctl",
                      2 * static_cast<size_t>(o.size) * fixed.slot_bytes));
  return std::unique_ptr<ControlPlane>(
      new ShmControlPlane(fixed, std::move(seg)));
}

}  // namespace hvd::runtime
