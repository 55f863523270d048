#include "runtime/backends/shm/shm_backend.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "common/random.h"

namespace hvd::runtime {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t kMagic = 0x68766473;  // "hvds"
constexpr int kMaxRanks = 256;
constexpr size_t kAlign = 64;

struct alignas(kAlign) RankState {
  // Barriers passed (a 32-bit futex word; compared modulo 2^32), and how
  // many peers sleep on it.
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> waiters{0};
  std::atomic<int32_t> pid{0};
  // alltoall: data left after this round, per data set (a fast rank's next
  // round must not overwrite what a slow one has still to read).
  std::atomic<uint32_t> more[2] = {0, 0};
};

struct Header {
  std::atomic<uint32_t> magic;
  std::atomic<uint32_t> mapped;
  uint32_t size;
  uint64_t slot_bytes;
  RankState ranks[kMaxRanks];
};

size_t RoundUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

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

class ShmBackend final : public Backend {
 public:
  ShmBackend(const ShmOptions& o, void* base, size_t bytes)
      : o_(o), base_(base), bytes_(bytes) {
    header_ = static_cast<Header*>(base);
    data_ = static_cast<uint8_t*>(base) + RoundUp(sizeof(Header));
  }
  ~ShmBackend() override { ::munmap(base_, bytes_); }

  Status Allreduce(void* data, size_t count, DataType type,
                   ReduceOp op) override {
    if (count == 0 || o_.size == 1) return Status::Ok();
    return Run("allreduce", [&]() -> Status {
      const size_t esize = DataTypeSize(type);
      const size_t per_chunk = o_.slot_bytes / esize;
      uint8_t* bytes = static_cast<uint8_t*>(data);
      for (size_t off = 0; off < count; off += per_chunk) {
        const size_t c = std::min(per_chunk, count - off);
        const int set = NextSet();
        std::memcpy(In(set, o_.rank), bytes + off * esize, c * esize);
        HVD_RETURN_IF_ERROR(Barrier("allreduce"));
        // This rank's share of the chunk, over every rank's slot in rank
        // order, into the shared result.
        const size_t lo = c * o_.rank / o_.size,
                     hi = c * (o_.rank + 1) / o_.size;
        if (hi > lo) {
          uint8_t* acc = Out(set) + lo * esize;
          std::memcpy(acc, In(set, 0) + lo * esize, (hi - lo) * esize);
          for (int q = 1; q < o_.size; ++q) {
            ReduceBuffers(type, op, acc, acc, In(set, q) + lo * esize, hi - lo);
          }
        }
        HVD_RETURN_IF_ERROR(Barrier("allreduce"));
        std::memcpy(bytes + off * esize, Out(set), c * esize);
      }
      return Status::Ok();
    });
  }

  Status Allgatherv(const void* in, void* out,
                    const std::vector<size_t>& bytes) override {
    if (bytes.size() != static_cast<size_t>(o_.size)) {
      return Status::InvalidArgument("allgatherv", "needs one size per rank");
    }
    return Run("allgatherv", [&]() -> Status {
      size_t most = *std::max_element(bytes.begin(), bytes.end());
      std::vector<size_t> at(o_.size, 0);
      for (int q = 1; q < o_.size; ++q) at[q] = at[q - 1] + bytes[q - 1];
      const uint8_t* mine = static_cast<const uint8_t*>(in);
      uint8_t* dst = static_cast<uint8_t*>(out);
      for (size_t off = 0; off < most || (most == 0 && off == 0);
           off += o_.slot_bytes) {
        if (most == 0) break;
        const int set = NextSet();
        if (off < bytes[o_.rank]) {
          std::memcpy(In(set, o_.rank), mine + off,
                      std::min(o_.slot_bytes, bytes[o_.rank] - off));
        }
        HVD_RETURN_IF_ERROR(Barrier("allgatherv"));
        for (int q = 0; q < o_.size; ++q) {
          if (off < bytes[q]) {
            std::memcpy(dst + at[q] + off, In(set, q),
                        std::min(o_.slot_bytes, bytes[q] - off));
          }
        }
      }
      return Status::Ok();
    });
  }

  Status Broadcast(void* data, size_t bytes, int root) override {
    if (root < 0 || root >= o_.size) {
      return Status::InvalidArgument("broadcast root",
                                     std::to_string(root) + " is not a rank");
    }
    if (bytes == 0 || o_.size == 1) return Status::Ok();
    return Run("broadcast", [&]() -> Status {
      uint8_t* p = static_cast<uint8_t*>(data);
      for (size_t off = 0; off < bytes; off += o_.slot_bytes) {
        const size_t c = std::min(o_.slot_bytes, bytes - off);
        const int set = NextSet();
        if (o_.rank == root) std::memcpy(In(set, root), p + off, c);
        HVD_RETURN_IF_ERROR(Barrier("broadcast"));
        if (o_.rank != root) std::memcpy(p + off, In(set, root), c);
      }
      return Status::Ok();
    });
  }

  Status Alltoallv(const void* in, const std::vector<size_t>& send_bytes,
                   void* out, const std::vector<size_t>& recv_bytes) override {
    const size_t n = static_cast<size_t>(o_.size);
    if (send_bytes.size() != n || recv_bytes.size() != n) {
      return Status::InvalidArgument("alltoallv", "needs one size per rank");
    }
    return Run("alltoallv", [&]() -> Status {
      // Each slot is cut in one piece per destination; rounds go on while
      // any rank still has data for anyone (the "more" flags every rank
      // reads after the barrier).
      const size_t piece = o_.slot_bytes / n / kAlign * kAlign;
      std::vector<size_t> sent_at(n, 0), recv_at(n, 0);
      for (size_t q = 1; q < n; ++q) {
        sent_at[q] = sent_at[q - 1] + send_bytes[q - 1];
        recv_at[q] = recv_at[q - 1] + recv_bytes[q - 1];
      }
      const uint8_t* src = static_cast<const uint8_t*>(in);
      uint8_t* dst = static_cast<uint8_t*>(out);
      for (size_t off = 0;; off += piece) {
        const int set = NextSet();
        bool more = false;
        for (size_t d = 0; d < n; ++d) {
          if (off < send_bytes[d]) {
            std::memcpy(In(set, o_.rank) + d * piece, src + sent_at[d] + off,
                        std::min(piece, send_bytes[d] - off));
          }
          more |= off + piece < send_bytes[d];
        }
        header_->ranks[o_.rank].more[set].store(more,
                                                std::memory_order_relaxed);
        HVD_RETURN_IF_ERROR(Barrier("alltoallv"));
        bool anyone = false;
        for (size_t q = 0; q < n; ++q) {
          if (off < recv_bytes[q]) {
            std::memcpy(dst + recv_at[q] + off, In(set, q) + o_.rank * piece,
                        std::min(piece, recv_bytes[q] - off));
          }
          anyone |=
              header_->ranks[q].more[set].load(std::memory_order_relaxed) != 0;
        }
        if (!anyone) break;
      }
      return Status::Ok();
    });
  }

  Status Reducescatter(const void* in, void* out,
                       const std::vector<size_t>& counts, DataType type,
                       ReduceOp op) override {
    if (counts.size() != static_cast<size_t>(o_.size)) {
      return Status::InvalidArgument("reducescatter",
                                     "needs one count per rank");
    }
    size_t total = 0, offset = 0;
    for (int r = 0; r < o_.size; ++r) {
      if (r < o_.rank) offset += counts[r];
      total += counts[r];
    }
    const size_t esize = DataTypeSize(type);
    scratch_.assign(static_cast<const uint8_t*>(in),
                    static_cast<const uint8_t*>(in) + total * esize);
    HVD_RETURN_IF_ERROR(Allreduce(scratch_.data(), total, type, op));
    if (counts[o_.rank]) {
      std::memcpy(out, scratch_.data() + offset * esize,
                  counts[o_.rank] * esize);
    }
    return Status::Ok();
  }

  Status Barrier() override {
    if (o_.size == 1) return Status::Ok();
    return Run("barrier", [&] { return Barrier("barrier"); });
  }

 private:
  template <typename F>
  Status Run(const char* what, F&& body) {
    if (!broken_.ok()) return broken_;
    Status s = body();
    if (!s.ok()) {
      broken_ = Status::Unavailable(
          "local rank " + std::to_string(o_.rank) + ": shared memory " + what,
          s.message());
    }
    return s.ok() ? s : broken_;
  }

  // The data sets alternate: a phase may overwrite set s only when every
  // rank has passed the barrier after the phase that last read it.
  int NextSet() { return static_cast<int>(set_counter_++ & 1); }
  uint8_t* In(int set, int rank) const {
    return data_ +
           (static_cast<size_t>(set) * (o_.size + 1) + rank) * o_.slot_bytes;
  }
  uint8_t* Out(int set) const { return In(set, o_.size); }

  // Arrive, then wait for every peer: a short spin (in a collective the
  // peers are usually microseconds away), then a futex sleep on the peer's
  // counter, so a rank waiting for one still computing its backward pass
  // leaves the CPU to it.
  Status Barrier(const char* what) {
    const uint32_t target = ++passed_;
    RankState& self = header_->ranks[o_.rank];
    self.seq.store(target, std::memory_order_release);
    if (self.waiters.load(std::memory_order_seq_cst) > 0) {
      Futex(&self.seq, FUTEX_WAKE, INT32_MAX, nullptr);
    }
    const auto start = Clock::now();
    for (int q = 0; q < o_.size; ++q) {
      RankState& peer = header_->ranks[q];
      auto reached = [&](uint32_t v) {
        return static_cast<int32_t>(v - target) >= 0;
      };
      int spins = 0;
      for (;;) {
        uint32_t v = peer.seq.load(std::memory_order_acquire);
        if (reached(v)) break;
        if (++spins < 200) {
#if defined(__x86_64__)
          __builtin_ia32_pause();
#endif
          continue;
        }
        peer.waiters.fetch_add(1, std::memory_order_seq_cst);
        timespec slice{0, 100 * 1000 * 1000};  // 100 ms, then checks
        Futex(&peer.seq, FUTEX_WAIT, v, &slice);
        peer.waiters.fetch_sub(1, std::memory_order_seq_cst);
        if (reached(peer.seq.load(std::memory_order_acquire))) break;
        auto now = Clock::now();
        if (now - start < std::chrono::milliseconds(100)) continue;
        int32_t pid = peer.pid.load();
        if (pid > 0 && Dead(pid)) {
          return Status::Unavailable(what, "local rank " + std::to_string(q) +
                                               " (pid " + std::to_string(pid) +
                                               ") exited");
        }
        if (now - start >= o_.op_timeout) {
          return Status::DeadlineExceeded(
              what, "local rank " + std::to_string(q) +
                        " did not arrive within " +
                        std::to_string(o_.op_timeout.count() / 1000) +
                        " s (HOROVOD_GLOO_TIMEOUT_SECONDS)");
        }
      }
    }
    return Status::Ok();
  }

  // The futex is shared between processes (no FUTEX_PRIVATE_FLAG).
  static long Futex(std::atomic<uint32_t>* word, int op, uint32_t val,
                    const timespec* timeout) {
    return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val,
                     timeout, nullptr, 0);
  }

  const ShmOptions o_;
  void* base_;
  size_t bytes_;
  Header* header_;
  uint8_t* data_;
  uint32_t passed_ = 0;
  uint64_t set_counter_ = 0;
  Status broken_;
  std::vector<uint8_t> scratch_;
};

}  // namespace

StatusOr<std::unique_ptr<Backend>> CreateShmBackend(const ShmOptions& o,
                                                    Store& store) {
  const std::string where =
      "local rank " + std::to_string(o.rank) + ": shared memory";
  if (o.size < 1 || o.size > kMaxRanks) {
    return Status::InvalidArgument(
        where,
        "supports 1 to " + std::to_string(kMaxRanks) + " ranks per host");
  }
  const size_t slot = RoundUp(std::max<size_t>(o.slot_bytes, kAlign * o.size));
  const size_t bytes =
      RoundUp(sizeof(Header)) + 2 * static_cast<size_t>(o.size + 1) * slot;
  const std::string key = "shm/" + o.group;
  std::string name;
  int fd = -1;
  if (o.rank == 0) {
    HVD_ASSIGN_OR_RETURN(std::string tag, RandomHex(8));
    name = "/hvd-" + o.job_id.substr(0, 16) + "-" + tag;
    fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      return Status::Internal(where,
                              "shm_open " + name + ": " + std::strerror(errno));
    }
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      int e = errno;
      ::close(fd);
      ::shm_unlink(name.c_str());
      return Status::ResourceExhausted(
          where, "cannot size the segment to " + std::to_string(bytes) +
                     " bytes: " + std::strerror(e) + " (is /dev/shm full?)");
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
    h->slot_bytes = slot;
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
        h->size != static_cast<uint32_t>(o.size) || h->slot_bytes != slot) {
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
  ShmOptions fixed = o;
  fixed.slot_bytes = slot;
  return std::unique_ptr<Backend>(new ShmBackend(fixed, base, bytes));
}

}  // namespace hvd::runtime
