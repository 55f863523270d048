// What hvd-ssh-exec sends hvd-remote-exec over the SSH channel's stdin:
// the worker's working directory, environment and argv, length-prefixed so
// any byte may appear (PEM text, newlines), then control lines. Secrets
// travel here, inside the encrypted channel, never on a command line.
//
//   HVD1\n  {D|E|A} <len>\n<bytes> ...  G\n   then  TERM\n | KILL\n ...
// EOF of stdin means the launcher is gone: the worker's group is killed.
#pragma once

#include <cstdint>
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

// One SSH connection per host: the host's workers share it (hvd-ssh-exec
// --share, hvd-remote-exec --agent), each worker's stream of the protocol
// above carried in frames that name it:
//
//   <kind: 1 byte> <worker: u32, big-endian> <length: u32> <bytes>
//
// Toward the host: kLaunch (the header above), kControl (control lines),
// kHangUp (the worker's launcher side is gone: its wrapper's stdin
// closes). Back: kStdout, kStderr, then kExit (the status in decimal) as
// the worker's last frame. Between a worker's hvd-ssh-exec and the one
// that holds the connection, kAccepted says its launch went on.
enum class FrameKind : char {
  kLaunch = 'L',
  kControl = 'C',
  kHangUp = 'H',
  kAccepted = 'A',
  kStdout = 'O',
  kStderr = 'E',
  kExit = 'X',
};

struct Frame {
  FrameKind kind = FrameKind::kControl;
  uint32_t worker = 0;
  std::string bytes;
  bool operator==(const Frame&) const = default;
};

std::string EncodeFrame(FrameKind kind, uint32_t worker,
                        std::string_view bytes);

// As DecodeRemoteLaunch, one frame: the bytes it took, or 0 when more are
// needed; an unknown kind or a length past 64 MiB is an error.
StatusOr<size_t> DecodeFrame(std::string_view buffer, Frame* out);

}  // namespace hvd::launcher
