// The engine's control plane over shared memory, for jobs whose ranks all
// share a host: a cycle's messages go through memory, not TCP loopback, so
// a small allreduce costs a few barriers instead of socket round trips.
//
// Each rank owns a box per data set. An exchange writes the message's
// length (and the message itself, when it fits in the box) and then its
// count, one store that both says "this rank has started exchange k" and
// carries the message: a steady-state message (a cache bit and a few
// bytes of data) shares the count's cache line, so a peer spinning on it
// gets both in one transfer. Longer messages then go in slot-sized rounds
// through the slots, a barrier after each. A peer that has not started
// after the spin gets its bell rung (a futex), which wakes its idle engine
// thread; a rank whose caller drives its cycles is not woken (the caller
// joins).
#include <linux/futex.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <functional>
#include <optional>

#include "common/copy_bytes.h"
#include "common/tsc_clock.h"
#include "runtime/transport/shm/shm_awake.h"
#include "runtime/transport/shm/shm_backend.h"

namespace hvd::runtime {
namespace {

class ShmControlPlane final : public ControlPlane {
 public:
  ShmControlPlane(const ShmOptions& o, std::unique_ptr<ShmSegment> seg,
                  std::function<bool(int)> on_ring)
      : o_(o), seg_(std::move(seg)), on_ring_(std::move(on_ring)) {}

  Status Exchange(const std::string& mine, std::vector<std::string>* all,
                  bool) override {
    return TimedExchange(mine, all, nullptr);
  }

  Status TimedExchange(const std::string& mine, std::vector<std::string>* all,
                       Timed* timed) override {
    if (!broken_.ok()) return broken_;
    Status s = Run(mine, all, timed);
    if (!s.ok()) {
      broken_ = Status::Unavailable(
          "local rank " + std::to_string(o_.rank) + ": control plane",
          s.message());
    }
    return s.ok() ? s : broken_;
  }

  void Notify() override {
    // Already notified and not yet seen: the engine thread clears the flag
    // before it looks for work, so it finds this caller's too (a burst of
    // submissions pays for one ring). A caller that stops driving clears
    // it too (SetDriving), since rings while it drove woke nobody.
    if (notified_.load(std::memory_order_seq_cst)) return;
    notified_.store(true, std::memory_order_seq_cst);
    Ring(o_.rank);
  }

  void Wait(std::chrono::milliseconds timeout, bool* peer) override {
    Sleep(timeout, /*started_wakes=*/true, peer);
  }
  void WaitForCaller(std::chrono::milliseconds timeout, bool* peer) override {
    Sleep(timeout, /*started_wakes=*/false, peer);
  }

  bool Drivable() const override { return true; }
  bool PeerWaiting() override { return PeerStarted(); }
  bool AwaitPeer() override {
    return seg_->SpinUntil([this] { return PeerStarted(); },
                           std::chrono::steady_clock::now() + spin_for_);
  }
  // The bell found on taking the cycles, for PeerRangWhileDriving.
  void SetDriving(bool on) override {
    ShmRankState& self = seg_->state(o_.rank);
    if (on) {
      // Unfenced: a ringer that does not see it yet wakes the engine
      // thread, which finds the cycles taken and sleeps again; one that
      // does moves the bell after the load above, which the caller sees
      // as it leaves.
      bell_at_drive_ = self.bell.load(std::memory_order_seq_cst);
      self.driving.store(1, std::memory_order_release);
    } else {
      self.driving.store(0, std::memory_order_seq_cst);
      // A Notify made while the flag was set rang without waking the
      // engine thread, yet left `notified_` set, which would hold back
      // the caller's own Notify as it hands work over. Every Notify moved
      // the bell, so a sleeper that looks later still sees it; clearing
      // after the store above lets the hand-off ring for real.
      notified_.store(false, std::memory_order_seq_cst);
    }
  }
  // Sequentially consistent against Ring: the ringer moves the bell, then
  // looks at `driving`; the caller clears `driving`, then looks at the
  // bell. Either the ringer wakes the engine thread, or the caller sees
  // the ring here.
  bool PeerRangWhileDriving() override {
    return seg_->state(o_.rank).bell.load(std::memory_order_seq_cst) !=
           bell_at_drive_;
  }

 public:
  // A rank's box of one set: its count and length, then the message when
  // it fits (a small tensor's data with it: 4 KiB and a header). The
  // first 48 bytes share the count's cache line.
  static constexpr size_t kBoxBytes = 8192;
  static constexpr size_t kInline = kBoxBytes - 16;
  struct alignas(kShmAlign) Line {
    std::atomic<uint32_t> count{0};  // exchanges this rank has started
    std::atomic<uint32_t> waiters{0};
    uint64_t length = 0;
    char bytes[kInline];
  };
  static_assert(sizeof(Line) == kBoxBytes);
  // Boxes lie a line more than their size apart. At a multiple of 4 KiB
  // every rank's count sat at the same offset in its page, and the CPU
  // held the load of a peer's count back behind the store to this rank's
  // (4K aliasing): a two-process ping-pong cost 54 ns an exchange against
  // 36, and the 4-byte allreduce went 0.211 -> 0.204 us with the gap.
  static constexpr size_t kBoxStride = kBoxBytes + kShmAlign;

 private:
  Line& line(int set, int rank) {
    return *reinterpret_cast<Line*>(
        seg_->data() + static_cast<size_t>(set * o_.size + rank) * kBoxStride);
  }

  bool PeerStarted() {
    const uint32_t mine = started_.load(std::memory_order_relaxed);
    for (int q = 0; q < o_.size; ++q) {
      if (q == o_.rank) continue;
      for (int set = 0; set < 2; ++set) {
        const uint32_t theirs =
            line(set, q).count.load(std::memory_order_seq_cst);
        if (static_cast<int32_t>(theirs - mine) > 0) return true;
      }
    }
    return false;
  }

  // Rings `q`'s bell, and wakes its engine thread if it sleeps and no
  // caller of `q` drives (the ringer's count or `notified_` is stored
  // before). The count always moves, so a sleeper that looks after the
  // ring still sees it (Sleep's rung_seen_).
  void Ring(int q) {
    if (on_ring_ && q != o_.rank && !on_ring_(q)) return;
    ShmRankState& s = seg_->state(q);
    s.bell.fetch_add(1, std::memory_order_seq_cst);
    if (s.driving.load(std::memory_order_seq_cst) == 0 &&
        s.bell_waiters.load(std::memory_order_seq_cst) > 0) {
      ShmSegment::Futex(&s.bell, FUTEX_WAKE, INT32_MAX, nullptr);
    }
  }

  // The engine thread's sleep on its bell until a ring since it last
  // looked, a Notify, a peer's exchange (`started_wakes`) or the timeout.
  void Sleep(std::chrono::milliseconds timeout, bool started_wakes,
             bool* peer) {
    ShmRankState& self = seg_->state(o_.rank);
    const uint32_t bell = self.bell.load(std::memory_order_seq_cst);
    auto reason = [&] {
      return bell != rung_seen_ || notified_.load(std::memory_order_seq_cst) ||
             (started_wakes && PeerStarted());
    };
    bool timed_out = false;
    if (!reason()) {
      self.bell_waiters.fetch_add(1, std::memory_order_seq_cst);
      // Ringers look at bell_waiters after their count (or notified_) is
      // stored and the bell moved: either they see this sleeper, or it
      // sees them here (a ring after `bell` was read fails the wait).
      if (!reason()) {
        timespec t{static_cast<time_t>(timeout.count() / 1000),
                   static_cast<long>(timeout.count() % 1000) * 1000000L};
        timed_out = ShmSegment::Futex(&self.bell, FUTEX_WAIT, bell, &t) != 0 &&
                    errno == ETIMEDOUT;
      }
      self.bell_waiters.fetch_sub(1, std::memory_order_seq_cst);
    }
    rung_seen_ = self.bell.load(std::memory_order_seq_cst);
    notified_.exchange(false);
    *peer = PeerStarted();
    // A dead peer never rings: after a quiet spell, look (reading /proc is
    // too slow for every wake-up), and let an exchange name it.
    for (int q = 0; timed_out && q < o_.size && !*peer; ++q) {
      if (q != o_.rank && seg_->PeerDead(q)) *peer = true;
    }
  }

  uint8_t* Slot(int set, int rank) {
    return seg_->data() + 2 * o_.size * kBoxStride +
           (static_cast<size_t>(set) * o_.size + rank) * o_.slot_bytes;
  }

  // Publishes this rank's line of exchange `count`, then waits for every
  // peer's. A peer whose caller is about to drive comes by itself: it gets
  // the spin time to show up before its engine thread is woken (a wake-up
  // costs more than the wait, and the woken thread would take the cycle
  // from that caller).
  Status Publish(const std::string& mine, uint32_t count, Timed* timed) {
    const int set = static_cast<int>(count & 1);
    Line& own = line(set, o_.rank);
    own.length = mine.size();
    CopyBytes(own.bytes, mine.data(), std::min(kInline, mine.size()));
    // A plain store: it drains while this rank looks for its peers, where
    // a fenced one would first wait for the line to leave the peers that
    // spin on it (one cross-core trip more per exchange). The fence that
    // pairs with a sleeper's count of waiters comes before this rank could
    // sleep itself, and at the end.
    own.count.store(count, std::memory_order_release);
    // No locked instruction until the peers came: it would wait for the
    // store above to leave this CPU, a cross-core trip.
    if (timed) timed->sent = timed->came = clock_.Now();
    bool woken = false;
    auto wake_sleepers = [&] {
      if (woken) return;
      woken = true;
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (own.waiters.load(std::memory_order_relaxed) > 0) {
        ShmSegment::Futex(&own.count, FUTEX_WAKE, INT32_MAX, nullptr);
      }
    };
    // The clock is read only once some peer is not there yet (a timed
    // exchange reads it in its spin first).
    std::optional<std::chrono::steady_clock::time_point> start;
    for (int q = 0; q < o_.size; ++q) {
      if (q == o_.rank) continue;
      Line& theirs = line(set, q);
      auto came = [&] {
        return static_cast<int32_t>(
                   theirs.count.load(std::memory_order_acquire) - count) >= 0;
      };
      if (!start && timed && SpinStamped(came, &timed->came)) continue;
      if (came()) continue;
      if (!start) {
        start = std::chrono::steady_clock::now();
        if (timed && timed->waiting) timed->waiting(timed->arg);
      }
      if (!seg_->SpinUntil(came, *start + spin_for_)) {
        wake_sleepers();
        Ring(q);
      }
      if (!came()) wake_sleepers();  // AwaitCount may sleep
      HVD_RETURN_IF_ERROR(seg_->AwaitCount(q, theirs.count, theirs.waiters,
                                           count, *start, "control exchange"));
    }
    if (timed && start) timed->came = clock_.Now();
    // The fence waits for the count's store to leave this CPU: skipped
    // when no peer can be asleep on it (shm_awake.h).
    if (!timed || !awake_.Exchanged(count, timed->sent, timed->came)) {
      wake_sleepers();
    }
    return Status::Ok();
  }

  // A short spin with the clock read at each turn (in place of the
  // pause) into `*stamp`: the time a peer's message came, for free.
  template <typename Done>
  bool SpinStamped(Done&& done, std::chrono::steady_clock::time_point* stamp) {
    for (int i = 0; i < turns_before_clock_; ++i) {
      if (done()) return true;
      *stamp = clock_.Now();
    }
    return done();
  }

  Status Run(const std::string& mine, std::vector<std::string>* all,
             Timed* timed) {
    const int n = o_.size;
    // A load and a store: one thread at a time exchanges (a locked add
    // cost a few percent of a small allreduce).
    const uint32_t count = started_.load(std::memory_order_relaxed) + 1;
    started_.store(count, std::memory_order_relaxed);
    HVD_RETURN_IF_ERROR(Publish(mine, count, timed));
    const int line_set = static_cast<int>(count & 1);
    all->resize(n);
    std::vector<uint64_t>& lengths = lengths_;
    lengths.resize(n);
    uint64_t longest = 0;
    for (int q = 0; q < n; ++q) {
      lengths[q] = line(line_set, q).length;
      longest = std::max(longest, lengths[q]);
    }
    if (longest <= kInline) {
      // The steady state: every message rode in its line.
      for (int q = 0; q < n; ++q) {
        if (q == o_.rank) continue;
        // Resized only when the length changed (a loop's messages keep
        // theirs), then copied as the segment's other copies are.
        std::string& theirs = (*all)[q];
        theirs.resize(lengths[q]);
        CopyBytes(theirs.data(), line(line_set, q).bytes, lengths[q]);
      }
      if (!timed || !timed->keeps_mine) (*all)[o_.rank] = mine;
      return Status::Ok();
    }
    for (int q = 0; q < n; ++q) {
      (*all)[q].clear();
      (*all)[q].reserve(lengths[q]);
    }
    const size_t slot = o_.slot_bytes;
    for (size_t off = 0;; off += slot) {
      const int set = static_cast<int>(set_counter_++ & 1);
      if (off < mine.size()) {
        CopyBytes(Slot(set, o_.rank), mine.data() + off,
                  std::min(slot, mine.size() - off));
      }
      HVD_RETURN_IF_ERROR(seg_->Barrier("control exchange"));
      for (int q = 0; q < n; ++q) {
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
  std::unique_ptr<ShmSegment> seg_;  // before the members read from it
  // How long a rank waits for a peer's exchange before it rings the
  // peer's engine thread (and a driving caller for a peer before it leaves
  // the cycles to its own): the barrier's spin, or, where the host's ranks
  // outnumber its CPUs (or share them), long enough for every rank to get
  // a turn on one (the wait yields meanwhile). A woken engine thread answers
  // without its caller's request, and the cycle after has to finish the job.
  const std::chrono::microseconds spin_for_ =
      seg_->Yields() ? std::chrono::microseconds(2000) : kShmSpinFor;
  // The exchange's stamps (`sent`, `came` and the spin's): the counter's
  // time, read by the one thread exchanging.
  TscClock clock_;
  // SpinStamped's turns, about a microsecond for a peer a moment behind;
  // none where ranks outnumber CPUs (the wait must yield the CPU).
  const int turns_before_clock_ = seg_->Yields() ? 0 : 48;
  const std::function<bool(int)> on_ring_;
  std::atomic<bool> notified_{false};
  uint32_t rung_seen_ = 0;
  uint32_t bell_at_drive_ = 0;  // the driving caller's: the bell it found
  // the engine thread's: the bell when it last looked
  // Exchanges this rank started; read by PeerStarted from any thread.
  std::atomic<uint32_t> started_{0};
  uint64_t set_counter_ = 0;
  ShmPeersAwake awake_;
  // Run's: each rank's message length (a member: no allocation per exchange)
  std::vector<uint64_t> lengths_;
  Status broken_;
};

}  // namespace

StatusOr<std::unique_ptr<ControlPlane>> CreateShmControlPlane(
    const ShmOptions& o, Store& store, std::function<bool(int)> on_ring) {
  ShmOptions fixed = o;
  fixed.slot_bytes = ShmRoundUp(std::max<size_t>(o.slot_bytes, 4096));
  HVD_ASSIGN_OR_RETURN(
      std::unique_ptr<ShmSegment> seg,
      ShmSegment::Map(fixed, store, "shmctl",
                      2 * static_cast<size_t>(o.size) *
                          (ShmControlPlane::kBoxStride + fixed.slot_bytes)));
  return std::unique_ptr<ControlPlane>(
      new ShmControlPlane(fixed, std::move(seg), std::move(on_ring)));
}

}  // namespace hvd::runtime
