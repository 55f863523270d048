#include "runtime/transport/tcp/tcp_control.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstring>

#include "common/host_port.h"
#include "common/random.h"
#include "runtime/wake_fd.h"

namespace hvd::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// Far above any cycle's message; a length past it means a corrupt stream.
constexpr uint32_t kMaxMessage = 1u << 30;
constexpr size_t kTicketBytes = 16;

std::string Errno(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - Clock::now())
                  .count();
  return left < 0 ? 0 : static_cast<int>(left) + 1;
}

// Reads or writes exactly n bytes on a blocking-by-poll socket before the
// deadline.
Status Transfer(int fd, void* buf, size_t n, bool write,
                Clock::time_point deadline, const std::string& peer) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t got = write ? ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT)
                        : ::recv(fd, p, n, MSG_DONTWAIT);
    if (got > 0) {
      p += got;
      n -= static_cast<size_t>(got);
      continue;
    }
    if (got == 0) return Status::Unavailable(peer, "closed the connection");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      return Status::Unavailable(peer, Errno(write ? "send" : "recv"));
    }
    pollfd pfd{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    int ready = ::poll(&pfd, 1, RemainingMs(deadline));
    if (ready == 0 || Clock::now() >= deadline) {
      return Status::DeadlineExceeded(peer, "did not answer in time");
    }
  }
  return Status::Ok();
}

Status Tune(int fd) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    return Status::Internal("control plane", Errno("TCP_NODELAY"));
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return Status::Internal("control plane", Errno("O_NONBLOCK"));
  }
  return Status::Ok();
}

// The address to bind: the interface's IPv4 address, or `hostname`.
StatusOr<sockaddr_storage> BindAddress(const ControlOptions& o,
                                       socklen_t* len) {
  sockaddr_storage addr{};
  if (!o.iface.empty()) {
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) {
      return Status::Internal("control plane", Errno("getifaddrs"));
    }
    bool found = false;
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
          o.iface == i->ifa_name) {
        std::memcpy(&addr, i->ifa_addr, sizeof(sockaddr_in));
        *len = sizeof(sockaddr_in);
        found = true;
        break;
      }
    }
    ::freeifaddrs(list);
    if (!found) {
      return Status::InvalidArgument(
          "interface '" + o.iface + "'",
          "has no IPv4 address here (check --network-interface)");
    }
    return addr;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(o.hostname.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    return Status::InvalidArgument(
        "address '" + o.hostname + "'",
        std::string("cannot be resolved: ") + ::gai_strerror(rc));
  }
  std::memcpy(&addr, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  ::freeaddrinfo(res);
  return addr;
}

std::string NumericHost(const sockaddr_storage& a, socklen_t len) {
  char host[NI_MAXHOST] = {0};
  ::getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, host, sizeof(host),
                nullptr, 0, NI_NUMERICHOST);
  return host;
}

class TcpControlPlane final : public ControlPlane {
 public:
  TcpControlPlane(const ControlOptions& o, std::vector<Fd> peers)
      : options_(o), peers_(std::move(peers)) {
    const size_t n = static_cast<size_t>(o.size);
    in_.resize(n);
    in_len_.resize(n);
    in_got_.resize(n);
    out_sent_.resize(n);
    pfds_.resize(n);
  }

  void Notify() override { wake_.Notify(); }

  void Wait(std::chrono::milliseconds timeout, bool* peer) override {
    *peer = false;
    struct Drain {
      WakeFd& w;
      ~Drain() { w.Drain(); }
    } drain{wake_};
    std::vector<pollfd> fds{{wake_.fd(), POLLIN, 0}};
    for (int p = 0; p < options_.size; ++p) {
      if (p != options_.rank) fds.push_back({peers_[p].get(), POLLIN, 0});
    }
    if (!broken_.ok()) return;
    int ready =
        ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
    if (ready <= 0) return;
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents) *peer = true;
    }
  }

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
      if (now < spin_until) continue;
      if (now >= deadline) return TimedOut();
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
  const std::string where =
      "rank " + std::to_string(o.rank) + ": control plane";
  auto deadline = Clock::now() + o.connect_timeout;
  socklen_t alen = 0;
  HVD_ASSIGN_OR_RETURN(sockaddr_storage addr, BindAddress(o, &alen));
  Fd listener(::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (listener.get() < 0) return Status::Internal(where, Errno("socket"));
  // Port 0: the kernel picks a free one.
  if (addr.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&addr)->sin_port = 0;
  } else {
    reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port = 0;
  }
  if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), alen) != 0 ||
      ::listen(listener.get(), o.size) != 0) {
    return Status::InvalidArgument(
        where, Errno(("cannot listen on " + NumericHost(addr, alen)).c_str()) +
                   " (check --network-interface)");
  }
  sockaddr_storage bound{};
  socklen_t blen = sizeof(bound);
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound), &blen);
  HostPort me{NumericHost(bound, blen),
              ntohs(bound.ss_family == AF_INET
                        ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                        : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)};
  HVD_ASSIGN_OR_RETURN(std::string ticket, RandomHex(kTicketBytes));
  HVD_RETURN_IF_ERROR(
      store.Set("ctl/" + std::to_string(o.rank), me.ToString() + " " + ticket));

  std::vector<Fd> peers(static_cast<size_t>(o.size));
  // Connect to every lower rank, presenting its ticket.
  for (int p = 0; p < o.rank; ++p) {
    const std::string peer = where + ": rank " + std::to_string(p);
    HVD_ASSIGN_OR_RETURN(
        std::vector<std::string> got,
        store.Wait({"ctl/" + std::to_string(p)}, o.connect_timeout));
    const std::string& v = got[0];
    size_t space = v.rfind(' ');
    if (space == std::string::npos) {
      return Status::DataLoss(peer, "published a malformed address");
    }
    HVD_ASSIGN_OR_RETURN(HostPort hp,
                         ParseHostPort(v.substr(0, space), "control address"));
    std::string their_ticket = v.substr(space + 1);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST;
    addrinfo* res = nullptr;
    if (::getaddrinfo(hp.host.c_str(), std::to_string(hp.port).c_str(), &hints,
                      &res) != 0 ||
        res == nullptr) {
      return Status::DataLoss(peer, "published an address that is not numeric");
    }
    Fd fd(::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int rc =
        fd.get() < 0 ? -1 : ::connect(fd.get(), res->ai_addr, res->ai_addrlen);
    ::freeaddrinfo(res);
    if (rc != 0) {
      return Status::Unavailable(
          peer, Errno(("cannot connect to " + hp.ToString()).c_str()));
    }
    HVD_RETURN_IF_ERROR(Tune(fd.get()));
    std::string hello(4, '\0');
    int32_t r = o.rank;
    std::memcpy(hello.data(), &r, 4);
    hello += their_ticket;
    HVD_RETURN_IF_ERROR(
        Transfer(fd.get(), hello.data(), hello.size(), true, deadline, peer));
    peers[p] = std::move(fd);
  }
  // Accept every higher rank; a connection without the right ticket is
  // dropped and does not count.
  int missing = o.size - 1 - o.rank;
  while (missing > 0) {
    pollfd pfd{listener.get(), POLLIN, 0};
    int ready = ::poll(&pfd, 1, RemainingMs(deadline));
    if (ready == 0 || Clock::now() >= deadline) {
      std::string absent;
      for (int p = o.rank + 1; p < o.size; ++p) {
        if (peers[p].get() < 0) {
          absent += (absent.empty() ? "" : ", ") + std::to_string(p);
        }
      }
      return Status::DeadlineExceeded(
          where, "rank(s) " + absent + " did not connect within " +
                     std::to_string(o.connect_timeout.count() / 1000) +
                     " s (raise HOROVOD_START_TIMEOUT if they start slowly)");
    }
    Fd fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (fd.get() < 0) continue;
    if (!Tune(fd.get()).ok()) continue;
    std::string hello(4 + 2 * kTicketBytes, '\0');
    // A stranger gets a short deadline so it cannot hold up the mesh.
    auto hello_deadline =
        std::min(deadline, Clock::now() + std::chrono::seconds(5));
    if (!Transfer(fd.get(), hello.data(), hello.size(), false, hello_deadline,
                  where)
             .ok()) {
      continue;
    }
    int32_t r;
    std::memcpy(&r, hello.data(), 4);
    if (r <= o.rank || r >= o.size || peers[r].get() >= 0 ||
        !ConstantTimeEquals(hello.substr(4), ticket)) {
      continue;
    }
    peers[r] = std::move(fd);
    --missing;
  }
  return std::unique_ptr<ControlPlane>(
      new TcpControlPlane(o, std::move(peers)));
}

}  // namespace hvd::runtime
