#include "rendezvous/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/parse.h"

namespace hvd::rendezvous {

Status SdNotify(const std::string& state) {
  auto path = GetEnv("NOTIFY_SOCKET");
  if (!path || path->empty()) return Status::Ok();
  sockaddr_un addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if (path->size() >= sizeof(addr.sun_path)) {
    return Status::InvalidArgument("NOTIFY_SOCKET", "path is too long");
  }
  std::memcpy(addr.sun_path, path->data(), path->size());
  // '@' names a socket in the abstract namespace.
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';
  socklen_t len =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path->size());
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Internal("sd_notify socket", std::strerror(errno));
  ssize_t n = sendto(fd, state.data(), state.size(), MSG_NOSIGNAL,
                     reinterpret_cast<sockaddr*>(&addr), len);
  int e = errno;
  close(fd);
  if (n < 0) {
    return Status::Unavailable("sd_notify to " + *path, std::strerror(e));
  }
  return Status::Ok();
}

}  // namespace hvd::rendezvous
