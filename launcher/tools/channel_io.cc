#include "launcher/tools/channel_io.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace hvd::launcher {

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t w = write(fd, data.data(), data.size());
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data.remove_prefix(static_cast<size_t>(w));
  }
  return true;
}

bool ChannelWriteAll(ssh_channel ch, std::string_view data) {
  while (!data.empty()) {
    int n =
        ssh_channel_write(ch, data.data(), static_cast<uint32_t>(data.size()));
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace hvd::launcher
