// TCP sockets between the ranks (to all of them, or to the peers an
// algorithm needs), connected through the store, for the transports that
// read and write their own sockets (the control plane, the TCP ring):
// rank r listens and publishes its address
// and a random ticket under `<prefix>/r`; lower ranks accept, higher ranks
// connect and must present the ticket they read from the (authenticated)
// store, so no other process on the network can pose as a rank. Sockets
// are non-blocking, with TCP_NODELAY.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/store.h"
#include "runtime/transport/tcp/tcp_options.h"

namespace hvd::runtime {

// An owned socket.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd();
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept;
  int get() const { return fd_; }

 private:
  int fd_;
};

// `streams` sockets to every other rank: (*mesh)[peer][stream]; this
// rank's own entry is empty. `what` names the mesh in errors ("control
// plane").
StatusOr<std::vector<std::vector<Fd>>> ConnectMesh(const TcpOptions& options,
                                                   Store& store,
                                                   const std::string& prefix,
                                                   const std::string& what,
                                                   int streams = 1);

// As ConnectMesh, to the ranks in `peers` only (the others' entries stay
// empty): a rank opens the sockets its algorithms use, not N - 1 of them.
// Every rank must name a symmetric set (p names q exactly when q names p).
StatusOr<std::vector<std::vector<Fd>>> ConnectPeers(
    const TcpOptions& options, Store& store, const std::string& prefix,
    const std::string& what, const std::vector<int>& peers, int streams = 1);

// "what: <strerror(errno)>".
std::string Errno(const char* what);

// Milliseconds to `deadline` for poll (0 once past it).
int RemainingMs(std::chrono::steady_clock::time_point deadline);

}  // namespace hvd::runtime
