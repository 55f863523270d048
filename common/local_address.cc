#include "common/local_address.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hvd {

StatusOr<std::string> LocalAddressToward(const std::string& peer) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(peer.c_str(), "9", &hints, &res) != 0 || res == nullptr) {
    return Status::InvalidArgument(peer, "is not an IP address");
  }
  int fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  Status err = Status::Ok();
  std::string out;
  // A UDP connect only picks the route and the source address.
  if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
    err = Status::NotFound(peer,
                           std::string("no route: ") + std::strerror(errno));
  } else {
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      err = Status::Internal("getsockname", std::strerror(errno));
    } else {
      char text[INET6_ADDRSTRLEN] = "";
      const void* at =
          local.ss_family == AF_INET6
              ? static_cast<const void*>(
                    &reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr)
              : static_cast<const void*>(
                    &reinterpret_cast<sockaddr_in*>(&local)->sin_addr);
      inet_ntop(local.ss_family, at, text, sizeof(text));
      out = text;
    }
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(res);
  if (!err.ok()) return err;
  return out;
}

}  // namespace hvd
