#include "runtime/transport/tcp/tcp_control.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>

#include <array>
#include <cstring>

#include "runtime/transport/tcp/tcp_mesh.h"
#include "runtime/wake_fd.h"

namespace hvd::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// Far above any cycle's message; a length past it means a corrupt stream.
constexpr uint32_t kMaxMessage = 1u << 30;

class TcpControlPlane final : public ControlPlane {
 public:
  // `peers`: the message connection to each peer; `bells`: a second one,
  // which carries a byte when a peer gave up waiting for this rank's
  // callers (its engine thread must answer).
  TcpControlPlane(const ControlOptions& o, std::vector<Fd> peers,
                  std::vector<Fd> bells)
      : options_(o), peers_(std::move(peers)), bells_(std::move(bells)) {
    const size_t n = static_cast<size_t>(o.size);
    in_.resize(n);
    in_len_.resize(n);
    in_got_.resize(n);
    out_sent_.resize(n);
    pfds_.resize(n);
    rang_.resize(n);
  }

  void Notify() override { wake_.Notify(); }

  void Wait(std::chrono::milliseconds timeout, bool* peer) override {
    Sleep(timeout, /*started_wakes=*/true, peer);
  }
  void WaitForCaller(std::chrono::milliseconds timeout, bool* peer) override {
    Sleep(timeout, /*started_wakes=*/false, peer);
  }

  // A caller may run the cycles: whether a peer has started an exchange is
  // whether its bytes wait on the socket.
  bool Drivable() const override { return true; }
  bool PeerWaiting() override { return Readable(peers_, 0); }
  bool AwaitPeer() override {
    const auto until = Clock::now() + options_.spin;
    do {
      if (PeerWaiting()) return true;
      sched_yield();
    } while (Clock::now() < until);
    return false;
  }
  // A ring that came while a caller drove is still unread: the engine
  // thread reads the bells.
  bool PeerRangWhileDriving() override { return Readable(bells_, 0); }

  Status Exchange(const std::string& mine, std::vector<std::string>* all,
                  bool urgent) override {
    if (!broken_.ok()) return broken_;
    spin_ = urgent ? options_.spin : std::chrono::microseconds(0);
    Status s = Run(mine, all);
    if (!s.ok()) broken_ = s;
    return s;
  }

 private:
  Status Run(const std::string& mine, std::vector<std::string>* all) {
    const int n = options_.size, me = options_.rank;
    const uint32_t len = static_cast<uint32_t>(mine.size());
    if (mine.size() >= kMaxMessage) {
      return Status::InvalidArgument(Where(), "control message too large");
    }
    char header[4];
    std::memcpy(header, &len, 4);
    int sends = n - 1, recvs = n - 1;
    for (int p = 0; p < n; ++p) {
      out_sent_[p] = 0;
      in_got_[p] = 0;
      in_len_[p] = UINT32_MAX;
      rang_[p] = false;
    }
    const size_t total_out = 4 + mine.size();
    auto deadline = Clock::now() + options_.op_timeout;
    auto spin_until = Clock::now() + spin_;
    while (sends > 0 || recvs > 0) {
      bool progress = false;
      for (int p = 0; p < n; ++p) {
        if (p == me) continue;
        int fd = peers_[p].get();
        // Send what is left of [length][message].
        while (out_sent_[p] < total_out) {
          iovec iov[2];
          int cnt = 0;
          size_t at = out_sent_[p];
          if (at < 4) iov[cnt++] = {header + at, 4 - at};
          size_t body_at = at < 4 ? 0 : at - 4;
          if (body_at < mine.size()) {
            iov[cnt++] = {const_cast<char*>(mine.data()) + body_at,
                          mine.size() - body_at};
          }
          msghdr msg{};
          msg.msg_iov = iov;
          msg.msg_iovlen = cnt;
          ssize_t w = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
          if (w > 0) {
            out_sent_[p] += static_cast<size_t>(w);
            progress = true;
            if (out_sent_[p] == total_out) --sends;
            continue;
          }
          if (errno == EINTR) continue;
          if (errno == EAGAIN || errno == EWOULDBLOCK) break;
          if (errno == EPIPE || errno == ECONNRESET) return PeerGone(p);
          return PeerFailed(p, Errno("send"));
        }
        // Receive [length][message].
        while (in_len_[p] == UINT32_MAX || in_got_[p] < in_len_[p]) {
          ssize_t r;
          if (in_len_[p] == UINT32_MAX) {
            r = ::recv(fd, len_buf_[p].data() + in_got_[p], 4 - in_got_[p],
                       MSG_DONTWAIT);
          } else {
            r = ::recv(fd, in_[p].data() + in_got_[p], in_len_[p] - in_got_[p],
                       MSG_DONTWAIT);
          }
          if (r == 0) return PeerGone(p);
          if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno == ECONNRESET) return PeerGone(p);
            return PeerFailed(p, Errno("recv"));
          }
          progress = true;
          in_got_[p] += static_cast<size_t>(r);
          if (in_len_[p] == UINT32_MAX && in_got_[p] == 4) {
            uint32_t l;
            std::memcpy(&l, len_buf_[p].data(), 4);
            if (l >= kMaxMessage) {
              return PeerFailed(p, "sent a corrupt control message");
            }
            in_len_[p] = l;
            in_got_[p] = 0;
            in_[p].resize(l);
          }
          if (in_len_[p] != UINT32_MAX && in_got_[p] == in_len_[p]) {
            --recvs;
            break;
          }
        }
      }
      if (sends == 0 && recvs == 0) break;
      if (progress) {
        spin_until = Clock::now() + spin_;
        continue;
      }
      auto now = Clock::now();
      if (now < spin_until) {
        sched_yield();  // see ControlOptions::spin
        continue;
      }
      if (now >= deadline) return TimedOut();
      // Peers that have not started this exchange: their callers did not
      // come within the spin, so their engine threads answer.
      for (int p = 0; p < n; ++p) {
        if (p != me && in_len_[p] == UINT32_MAX && in_got_[p] == 0) Ring(p);
      }
      int k = 0;
      for (int p = 0; p < n; ++p) {
        if (p == me) continue;
        short ev = 0;
        if (out_sent_[p] < total_out) ev |= POLLOUT;
        if (in_len_[p] == UINT32_MAX || in_got_[p] < in_len_[p]) ev |= POLLIN;
        if (ev) pfds_[k++] = {peers_[p].get(), ev, 0};
      }
      int ready = ::poll(pfds_.data(), k, RemainingMs(deadline));
      if (ready < 0 && errno != EINTR) {
        return Status::Internal(Where(), Errno("poll"));
      }
      spin_until = Clock::now() + spin_;
    }
    all->resize(n);
    for (int p = 0; p < n; ++p) {
      if (p == me) {
        (*all)[p] = mine;
      } else {
        (*all)[p].swap(in_[p]);
      }
    }
    return Status::Ok();
  }

  // Whether a byte (or a hang-up) waits on any of `fds` within
  // `timeout_ms` (any thread: the caller that drives and the engine
  // thread both look).
  bool Readable(const std::vector<Fd>& fds, int timeout_ms) const {
    std::vector<pollfd> p;
    p.reserve(fds.size());
    for (int q = 0; q < options_.size; ++q) {
      if (q != options_.rank && fds[q].get() >= 0) {
        p.push_back({fds[q].get(), POLLIN, 0});
      }
    }
    return ::poll(p.data(), p.size(), timeout_ms) > 0;
  }

  // The engine thread's sleep until a Notify, a ring, a peer's exchange
  // (`started_wakes`; while this rank's callers drive, they join it) or
  // the timeout. *peer: a peer has started an exchange (or hung up).
  void Sleep(std::chrono::milliseconds timeout, bool started_wakes,
             bool* peer) {
    *peer = false;
    if (!broken_.ok()) return;
    std::vector<pollfd> fds{{wake_.fd(), POLLIN, 0}};
    for (int q = 0; q < options_.size; ++q) {
      if (q == options_.rank) continue;
      if (bells_[q].get() >= 0) fds.push_back({bells_[q].get(), POLLIN, 0});
      if (started_wakes) fds.push_back({peers_[q].get(), POLLIN, 0});
    }
    (void)::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
    wake_.Drain();
    char sink[64];
    for (int q = 0; q < options_.size; ++q) {
      if (q == options_.rank || bells_[q].get() < 0) continue;
      ssize_t r;
      while ((r = ::recv(bells_[q].get(), sink, sizeof(sink), MSG_DONTWAIT)) >
             0) {
      }
      // A hung-up bell: the peer is gone, and an exchange names it.
      if (r == 0) *peer = true;
    }
    if (PeerWaiting()) *peer = true;
  }

  // Wakes peer `p`'s engine thread: its callers did not come within the
  // spin (once per exchange).
  void Ring(int p) {
    if (rang_[p] || bells_[p].get() < 0) return;
    rang_[p] = true;
    const char one = 1;
    (void)!::send(bells_[p].get(), &one, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  std::string Where() const {
    return "rank " + std::to_string(options_.rank) + ": control plane";
  }

  Status PeerFailed(int p, const std::string& what) const {
    return Status::Unavailable(Where(),
                               "rank " + std::to_string(p) + " " + what);
  }

  Status PeerGone(int p) const {
    return PeerFailed(p, "closed its connection (it exited or crashed)");
  }

  Status TimedOut() const {
    std::string silent;
    for (int p = 0; p < options_.size; ++p) {
      if (p == options_.rank) continue;
      if (in_len_[p] == UINT32_MAX || in_got_[p] < in_len_[p]) {
        silent += (silent.empty() ? "" : ", ") + std::to_string(p);
      }
    }
    return Status::DeadlineExceeded(
        Where(), "no message from rank(s) " + silent + " within " +
                     std::to_string(options_.op_timeout.count() / 1000) +
                     " s (raise HOROVOD_GLOO_TIMEOUT_SECONDS if they are only "
                     "slow)");
  }

  const ControlOptions options_;
  WakeFd wake_;
  std::chrono::microseconds spin_{0};  // this exchange's
  std::vector<Fd> peers_;
  std::vector<Fd> bells_;
  std::vector<bool> rang_;  // this exchange's rings, by peer
  Status broken_;
  std::vector<std::string> in_;
  std::vector<uint32_t> in_len_;
  std::vector<size_t> in_got_;
  std::vector<size_t> out_sent_;
  std::vector<std::array<char, 4>> len_buf_ =
      std::vector<std::array<char, 4>>(static_cast<size_t>(options_.size));
  std::vector<pollfd> pfds_;
};

}  // namespace

StatusOr<std::unique_ptr<ControlPlane>> CreateTcpControlPlane(
    const ControlOptions& o, Store& store) {
  HVD_ASSIGN_OR_RETURN(std::vector<std::vector<Fd>> mesh,
                       ConnectMesh(o, store, "ctl", "control plane",
                                   /*streams=*/2));
  std::vector<Fd> peers, bells;
  for (auto& streams : mesh) {
    peers.push_back(streams.empty() ? Fd() : std::move(streams[0]));
    bells.push_back(streams.size() < 2 ? Fd() : std::move(streams[1]));
  }
  return std::unique_ptr<ControlPlane>(
      new TcpControlPlane(o, std::move(peers), std::move(bells)));
}

}  // namespace hvd::runtime
