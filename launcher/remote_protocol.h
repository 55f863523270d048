// What hvd-ssh-exec sends hvd-remote-exec over the SSH channel's stdin:
// the worker's working directory, environment and argv, length-prefixed so
// any byte may appear (PEM text, newlines), then control lines. Secrets
// travel here, inside the encrypted channel, never on a command line.
//
//   HVD1\n  {D|E|A} <len>\n<bytes> ...  G\n   then  TERM\n | KILL\n ...
// EOF of stdin means the launcher is gone: the worker's group is killed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace hvd::launcher {

struct RemoteLaunch {
  std::string cwd;
  std::vector<std::string> env;  // "K=V"
  std::vector<std::string> argv;
  bool operator==(const RemoteLaunch&) const = default;
};

std::string EncodeRemoteLaunch(const RemoteLaunch& launch);

// Decodes a header from the front of `buffer`; returns the bytes it took,
// or 0 when more bytes are needed. Errors on a malformed header.
StatusOr<size_t> DecodeRemoteLaunch(std::string_view buffer, RemoteLaunch* out);

}  // namespace hvd::launcher
