#include "runtime/transport/tcp/tcp_mesh.h"

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

#include <algorithm>
#include <cstring>

#include "common/host_port.h"
#include "common/random.h"

namespace hvd::runtime {

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

std::string Errno(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

int RemainingMs(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - std::chrono::steady_clock::now())
                  .count();
  return left < 0 ? 0 : static_cast<int>(left) + 1;
}

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kTicketBytes = 16;
// How often a rank accepting its peers asks the store whether its
// generation is still current (Store::Current).
constexpr int kCurrentMs = 500;

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
    return Status::Internal("tcp", Errno("TCP_NODELAY"));
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return Status::Internal("tcp", Errno("O_NONBLOCK"));
  }
  return Status::Ok();
}

// The address to bind: the interface's IPv4 address, or `hostname`.
StatusOr<sockaddr_storage> BindAddress(const TcpOptions& o, socklen_t* len) {
  sockaddr_storage addr{};
  if (!o.iface.empty()) {
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) {
      return Status::Internal("tcp", Errno("getifaddrs"));
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

// A connected, tuned socket to `hp` (a numeric address).
StatusOr<Fd> Dial(const HostPort& hp, const std::string& peer) {
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
  return fd;
}

}  // namespace

StatusOr<std::vector<std::vector<Fd>>> ConnectMesh(const TcpOptions& o,
                                                   Store& store,
                                                   const std::string& prefix,
                                                   const std::string& what,
                                                   int streams) {
  std::vector<int> everyone;
  for (int p = 0; p < o.size; ++p) {
    if (p != o.rank) everyone.push_back(p);
  }
  return ConnectPeers(o, store, prefix, what, everyone, streams);
}

StatusOr<std::vector<std::vector<Fd>>> ConnectPeers(
    const TcpOptions& o, Store& store, const std::string& prefix,
    const std::string& what, const std::vector<int>& wanted, int streams) {
  const std::string where = "rank " + std::to_string(o.rank) + ": " + what;
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
      ::listen(listener.get(), static_cast<int>(wanted.size() + 1) * streams) !=
          0) {
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
  HVD_RETURN_IF_ERROR(store.Set(prefix + "/" + std::to_string(o.rank),
                                me.ToString() + " " + ticket));

  std::vector<std::vector<Fd>> peers(static_cast<size_t>(o.size));
  std::vector<bool> is_peer(static_cast<size_t>(o.size), false);
  for (int p : wanted) {
    if (p >= 0 && p < o.size && p != o.rank) is_peer[p] = true;
  }
  // Connect to every lower peer, presenting its ticket.
  for (int p = 0; p < o.rank; ++p) {
    if (!is_peer[p]) continue;
    const std::string peer = where + ": rank " + std::to_string(p);
    HVD_ASSIGN_OR_RETURN(
        std::vector<std::string> got,
        store.Wait({prefix + "/" + std::to_string(p)}, o.connect_timeout));
    const std::string& v = got[0];
    size_t space = v.rfind(' ');
    if (space == std::string::npos) {
      return Status::DataLoss(peer, "published a malformed address");
    }
    HVD_ASSIGN_OR_RETURN(HostPort hp,
                         ParseHostPort(v.substr(0, space), "control address"));
    std::string their_ticket = v.substr(space + 1);
    for (int s = 0; s < streams; ++s) {
      HVD_ASSIGN_OR_RETURN(Fd fd, Dial(hp, peer));
      // [rank][stream][ticket]
      std::string hello(8, '\0');
      int32_t id[2] = {o.rank, s};
      std::memcpy(hello.data(), id, 8);
      hello += their_ticket;
      HVD_RETURN_IF_ERROR(
          Transfer(fd.get(), hello.data(), hello.size(), true, deadline, peer));
      peers[p].push_back(std::move(fd));
    }
  }
  // Accept every higher peer's streams; a connection without the right
  // ticket, or from a rank that is no peer, is dropped and does not count.
  int missing = 0;
  for (int p = o.rank + 1; p < o.size; ++p) {
    if (!is_peer[p]) continue;
    peers[p].resize(streams);
    missing += streams;
  }
  while (missing > 0) {
    pollfd pfd{listener.get(), POLLIN, 0};
    // In slices, to ask between them whether the generation was superseded
    // (its peers then never come).
    int ready = ::poll(&pfd, 1, std::min(RemainingMs(deadline), kCurrentMs));
    if (ready == 0 && Clock::now() < deadline) {
      HVD_RETURN_IF_ERROR(store.Current().WithContext(where));
      continue;
    }
    if (ready == 0 || Clock::now() >= deadline) {
      std::string absent;
      for (int p = o.rank + 1; p < o.size; ++p) {
        if (!is_peer[p]) continue;
        bool all = true;
        for (const Fd& f : peers[p]) all = all && f.get() >= 0;
        if (!all) absent += (absent.empty() ? "" : ", ") + std::to_string(p);
      }
      return Status::DeadlineExceeded(
          where, "rank(s) " + absent + " did not connect within " +
                     std::to_string(o.connect_timeout.count() / 1000) +
                     " s (raise HOROVOD_START_TIMEOUT if they start slowly)");
    }
    Fd fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (fd.get() < 0) continue;
    if (!Tune(fd.get()).ok()) continue;
    std::string hello(8 + 2 * kTicketBytes, '\0');
    // A stranger gets a short deadline so it cannot hold up the mesh.
    auto hello_deadline =
        std::min(deadline, Clock::now() + std::chrono::seconds(5));
    if (!Transfer(fd.get(), hello.data(), hello.size(), false, hello_deadline,
                  where)
             .ok()) {
      continue;
    }
    int32_t id[2];
    std::memcpy(id, hello.data(), 8);
    const int r = id[0], s = id[1];
    if (r <= o.rank || r >= o.size || !is_peer[r] || s < 0 || s >= streams ||
        peers[r][s].get() >= 0 ||
        !ConstantTimeEquals(hello.substr(8), ticket)) {
      continue;
    }
    peers[r][s] = std::move(fd);
    --missing;
  }
  return peers;
}

}  // namespace hvd::runtime
