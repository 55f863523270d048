#include "runtime/transport/shm/shm_segment.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "common/random.h"
#include "common/shm_names.h"

namespace hvd::runtime {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMagic = 0x68766473;  // "hvds"
}  // namespace

// kShmSpinFor: how long a barrier spins before it sleeps. A peer a few
// microseconds behind (a copy, a reduce, a scheduler tick) should not cost a
// futex sleep: waking a sleeping thread takes tens of microseconds, far more in
// a virtual machine whose idle vCPU halts. Where the host's ranks
// outnumber its CPUs, a spinning rank only takes the CPU the late one
// needs, so it yields instead (sched_yield) for the same time.
bool ShmOversubscribed(int local_ranks) {
  static const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 0 && local_ranks > cpus;
}

namespace {

struct Header {
  std::atomic<uint32_t> magic;
  std::atomic<uint32_t> mapped;
  uint32_t size;
  uint64_t data_bytes;
  ShmRankState ranks[kShmMaxRanks];
};

size_t RoundUp(size_t n) { return ShmRoundUp(n); }

// Gone, or a zombie its parent has not reaped yet: either way it will not
// arrive.
bool Dead(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char buf[512] = {0};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  const char* close = std::strrchr(buf, ')');
  return n > 0 && close && close[1] == ' ' &&
         (close[2] == 'Z' || close[2] == 'X');
}

}  // namespace

size_t ShmRoundUp(size_t n) {
  return (n + kShmAlign - 1) / kShmAlign * kShmAlign;
}

ShmSegment::~ShmSegment() {
  if (base_) ::munmap(base_, bytes_);
}

ShmRankState& ShmSegment::state(int rank) {
  return static_cast<Header*>(base_)->ranks[rank];
}

bool ShmSegment::PeerDead(int rank) {
  int32_t pid = state(rank).pid.load();
  return pid > 0 && Dead(pid);
}

// Arrive, then wait for every peer: a short spin (in a collective the
// peers are usually microseconds away: kShmSpinFor), then a futex sleep on the
// peer's counter, so a rank waiting for one still computing its backward pass
// leaves the CPU to it.
Status ShmSegment::Barrier(const char* what) {
  const uint32_t target = ++passed_;
  ShmRankState& self = state(o_.rank);
  self.seq.store(target, std::memory_order_release);
  if (self.waiters.load(std::memory_order_seq_cst) > 0) {
    Futex(&self.seq, FUTEX_WAKE, INT32_MAX, nullptr);
  }
  const auto start = Clock::now();
  for (int q = 0; q < o_.size; ++q) {
    // The spin time counts from the arrival, for all peers together.
    HVD_RETURN_IF_ERROR(
        AwaitCount(q, state(q).seq, state(q).waiters, target, start, what));
  }
  return Status::Ok();
}

Status ShmSegment::AwaitCount(int q, std::atomic<uint32_t>& word,
                              std::atomic<uint32_t>& waiters, uint32_t target,
                              Clock::time_point start, const char* what) {
  auto reached = [&](uint32_t v) {
    return static_cast<int32_t>(v - target) >= 0;
  };
  if (SpinUntil([&] { return reached(word.load(std::memory_order_acquire)); },
                start + kShmSpinFor)) {
    return Status::Ok();
  }
  for (;;) {
    uint32_t v = word.load(std::memory_order_acquire);
    if (reached(v)) return Status::Ok();
    waiters.fetch_add(1, std::memory_order_seq_cst);
    timespec slice{0, 100 * 1000 * 1000};  // 100 ms, then checks
    Futex(&word, FUTEX_WAIT, v, &slice);
    waiters.fetch_sub(1, std::memory_order_seq_cst);
    if (reached(word.load(std::memory_order_acquire))) return Status::Ok();
    auto now = Clock::now();
    if (now - start < std::chrono::milliseconds(100)) continue;
    int32_t pid = state(q).pid.load();
    if (pid > 0 && Dead(pid)) {
      return Status::Unavailable(what, "local rank " + std::to_string(q) +
                                           " (pid " + std::to_string(pid) +
                                           ") exited");
    }
    if (now - start >= o_.op_timeout) {
      return Status::DeadlineExceeded(
          what, "local rank " + std::to_string(q) + " did not arrive within " +
                    std::to_string(o_.op_timeout.count() / 1000) +
                    " s (HOROVOD_GLOO_TIMEOUT_SECONDS)");
    }
  }
}

// The futex is shared between processes (no FUTEX_PRIVATE_FLAG).
long ShmSegment::Futex(std::atomic<uint32_t>* word, int op, uint32_t val,
                       const timespec* timeout) {
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val,
                   timeout, nullptr, 0);
}

StatusOr<std::unique_ptr<ShmSegment>> ShmSegment::Map(
    const ShmOptions& o, Store& store, const std::string& purpose,
    size_t data_bytes) {
  const std::string where =
      "local rank " + std::to_string(o.rank) + ": shared memory";
  if (o.size < 1 || o.size > kShmMaxRanks) {
    return Status::InvalidArgument(
        where,
        "supports 1 to " + std::to_string(kShmMaxRanks) + " ranks per host");
  }
  const size_t bytes = RoundUp(sizeof(Header)) + RoundUp(data_bytes);
  const std::string key = purpose + "/" + o.group;
  std::string name;
  int fd = -1;
  if (o.rank == 0) {
    HVD_ASSIGN_OR_RETURN(std::string tag, RandomHex(8));
    name = "/" + ShmJobPrefix(o.job_id) + purpose + "-" + tag;
    fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      return Status::Internal(where,
                              "shm_open " + name + ": " + std::strerror(errno));
    }
    // Reserve the pages now: a tmpfs that is too small fails here with a
    // message, instead of killing a rank with SIGBUS at its first write.
    int reserve = ::ftruncate(fd, static_cast<off_t>(bytes)) != 0
                      ? errno
                      : ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    if (reserve != 0) {
      int e = reserve;
      ::close(fd);
      ::shm_unlink(name.c_str());
      return Status::ResourceExhausted(
          where, "cannot size the segment to " + std::to_string(bytes) +
                     " bytes: " + std::strerror(e) +
                     " (is /dev/shm full? HOROVOD_SHM_DISABLE=1 avoids it)");
    }
  } else {
    HVD_ASSIGN_OR_RETURN(std::vector<std::string> got,
                         store.Wait({key}, o.connect_timeout));
    name = got[0];
    fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
      return Status::Unavailable(
          where, "shm_open " + name + ": " + std::strerror(errno));
    }
  }
  void* base =
      ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) {
    if (o.rank == 0) ::shm_unlink(name.c_str());
    return Status::Internal(where,
                            std::string("mmap: ") + std::strerror(errno));
  }
  Header* h = static_cast<Header*>(base);
  if (o.rank == 0) {
    // A fresh segment is zero-filled: the counters start at 0.
    h->size = static_cast<uint32_t>(o.size);
    h->data_bytes = data_bytes;
    h->ranks[0].pid.store(::getpid());
    h->mapped.store(1);
    h->magic.store(kMagic, std::memory_order_release);
    Status s = store.Set(key, name);
    if (!s.ok()) {
      ::shm_unlink(name.c_str());
      ::munmap(base, bytes);
      return s;
    }
  } else {
    if (h->magic.load(std::memory_order_acquire) != kMagic ||
        h->size != static_cast<uint32_t>(o.size) ||
        h->data_bytes != data_bytes) {
      ::munmap(base, bytes);
      return Status::DataLoss(
          where, "segment " + name + " does not match this job's layout");
    }
    h->ranks[o.rank].pid.store(::getpid());
    // The last rank to map removes the name: from here on a crash of any
    // process leaves nothing behind.
    if (h->mapped.fetch_add(1) + 1 == static_cast<uint32_t>(o.size)) {
      ::shm_unlink(name.c_str());
    }
  }
  if (o.rank == 0) {
    // Whoever maps last unlinks; if someone never comes, rank 0 removes
    // the name itself before failing.
    auto deadline = Clock::now() + o.connect_timeout;
    while (h->mapped.load() < static_cast<uint32_t>(o.size)) {
      if (Clock::now() >= deadline) {
        ::shm_unlink(name.c_str());
        ::munmap(base, bytes);
        return Status::DeadlineExceeded(
            where, "not every local rank mapped the segment within " +
                       std::to_string(o.connect_timeout.count() / 1000) + " s");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (o.size == 1) ::shm_unlink(name.c_str());
  }
  std::unique_ptr<ShmSegment> seg(new ShmSegment());
  seg->o_ = o;
  seg->base_ = base;
  seg->bytes_ = bytes;
  seg->data_ = static_cast<uint8_t*>(base) + RoundUp(sizeof(Header));
  return seg;
}

}  // namespace hvd::runtime
