// Whole writes for hvd-ssh-exec: to a descriptor, and to an SSH channel.
#pragma once

#include <libssh/libssh.h>

#include <string_view>

namespace hvd::launcher {

// Writes every byte (retrying short writes and EINTR); false on an error.
bool WriteAll(int fd, std::string_view data);

// As WriteAll, on a blocking SSH channel.
bool ChannelWriteAll(ssh_channel ch, std::string_view data);

}  // namespace hvd::launcher
