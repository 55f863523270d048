// A shared-memory segment for the ranks of one host, and the barrier over
// its per-rank counters. Local rank 0 creates it (mode 0600) under a random
// name of the job (common/shm_names.h) it publishes in the rendezvous
// store; the others map it, and the last to map unlinks the name, so once a
// job runs nothing of it is left in /dev/shm whatever happens to its
// processes. A rank that dies before every peer has mapped leaves the name
// to whoever outlives the host's workers (the launcher's watchdog, or
// hvd-remote-exec), which sweeps the job's names when they are gone.
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/setting_keys.h"
#include "common/status.h"
#include "runtime/store.h"

namespace hvd::runtime {

inline constexpr int kShmMaxRanks = 256;
inline constexpr size_t kShmAlign = 64;

struct alignas(kShmAlign) ShmRankState {
  // Barriers passed (a 32-bit futex word, compared modulo 2^32), and how
  // many peers sleep on it.
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> waiters{0};
  std::atomic<int32_t> pid{0};
  // Per data set, so a fast rank's next round cannot overwrite what a slow
  // one still has to read: alltoall's "data left".
  std::atomic<uint32_t> more[2] = {0, 0};
  // Control plane: the bell (futex) peers ring to wake this rank's idle
  // engine, and how many sleep on it.
  std::atomic<uint32_t> bell{0};
  std::atomic<uint32_t> bell_waiters{0};
  // Nonzero while a caller of this rank runs its engine's cycles: peers
  // then leave its engine thread asleep.
  std::atomic<uint32_t> driving{0};
  // Single-copy allreduce: the address of this rank's buffer, per data
  // set, for the peers to read with process_vm_readv; and whether this
  // rank could read every peer when the backend started (1), or not (2).
  std::atomic<uint64_t> buffer[2] = {0, 0};
  std::atomic<uint32_t> can_read{0};
  // Reducing between buffers in shared blocks (shm_heap.h): per data set,
  // the block this rank's buffer lies in (id 0: none), the owner's
  // descriptor of it, its size and the buffer's offset in it.
  std::atomic<uint64_t> block_id[2] = {0, 0};
  std::atomic<uint64_t> block_bytes[2] = {0, 0};
  std::atomic<uint64_t> block_offset[2] = {0, 0};
  std::atomic<int32_t> block_fd[2] = {0, 0};
};

struct ShmOptions {
  int rank = 0;  // local rank
  int size = 1;  // local size
  // Names the segment's key in the store (the host) and the segment.
  std::string group = "host";
  std::string job_id;
  size_t slot_bytes = 1u << 20;
  // Allreduces of at least this many bytes read the peers' buffers
  // directly (cross-memory attach); 0 never.
  size_t single_copy_bytes = 0;
  // ... and at most this many (0: no limit).
  size_t single_copy_limit = 0;
  std::chrono::milliseconds connect_timeout{
      settings::Default(settings::key::kStartTimeout)};
  std::chrono::milliseconds op_timeout{
      settings::Default(settings::key::kGlooTimeout)};
  // The host's CPUs may be busy with more than its ranks of this segment
  // (a job of several hosts, where the leaders' network exchanges need
  // them, and hosts may share a machine): waits yield the CPU at every
  // turn, as where the ranks outnumber the CPUs (Yields). Their waits
  // last network trips, which dwarf a yield.
  bool share_cpus = false;
};

// How long a waiting rank spins before it sleeps, and whether it yields
// the CPU meanwhile (see shm_segment.cc).
inline constexpr auto kShmSpinFor = std::chrono::microseconds(50);
bool ShmOversubscribed(int local_ranks);

class ShmSegment {
 public:
  // Creates or maps the segment `purpose` ("data", "control") with
  // `data_bytes` after the header.
  static StatusOr<std::unique_ptr<ShmSegment>> Map(const ShmOptions& options,
                                                   Store& store,
                                                   const std::string& purpose,
                                                   size_t data_bytes);
  ~ShmSegment();

  ShmRankState& state(int rank);
  uint8_t* data() const { return data_; }
  int rank() const { return o_.rank; }
  int size() const { return o_.size; }

  // Arrive, then wait for every peer: a short spin, then a futex sleep; a
  // peer that died or stays away past the timeout is an error naming it.
  Status Barrier(const char* what);
  // Waits until `word` (a counter of local rank `q`, compared modulo 2^32)
  // reaches `target`: spins until kShmSpinFor after `start`, then sleeps on
  // the futex, counted in `waiters`; an error names `q` when it died or
  // stays away past the timeout.
  Status AwaitCount(int q, std::atomic<uint32_t>& word,
                    std::atomic<uint32_t>& waiters, uint32_t target,
                    std::chrono::steady_clock::time_point start,
                    const char* what);
  // True when `rank`'s process is gone (or a zombie).
  bool PeerDead(int rank);
  // Whether waits yield the CPU at each turn: the ranks outnumber the
  // CPUs, or share them (ShmOptions::share_cpus).
  bool Yields() const { return o_.share_cpus || ShmOversubscribed(o_.size); }

  // Spins until `done()` holds, at most until `until` (yielding instead of
  // pausing where the host's ranks outnumber its CPUs); whether it held.
  template <typename Done>
  bool SpinUntil(Done&& done,
                 std::chrono::steady_clock::time_point until) const;

  static long Futex(std::atomic<uint32_t>* word, int op, uint32_t val,
                    const timespec* timeout);

 private:
  ShmSegment() = default;
  ShmOptions o_;
  void* base_ = nullptr;
  size_t bytes_ = 0;
  uint8_t* data_ = nullptr;
  uint32_t passed_ = 0;
};

size_t ShmRoundUp(size_t n);

template <typename Done>
bool ShmSegment::SpinUntil(Done&& done,
                           std::chrono::steady_clock::time_point until) const {
  const bool yield = Yields();
  for (int spins = 1;; ++spins) {
    if (done()) return true;
    // The clock (vDSO, no system call) is read every 64 turns.
    if (spins % 64 == 0 && std::chrono::steady_clock::now() >= until) {
      return false;
    }
    if (yield) {
      sched_yield();
    } else {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
  }
}

}  // namespace hvd::runtime
