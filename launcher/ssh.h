// SSH connections with libssh: connect, check the host key against
// known_hosts under a policy, authenticate (identity file, ssh-agent, the
// user's default keys). Used by the pre-flight check of every remote host
// and by hvd-ssh-exec, which runs one remote worker.
//
// Not thread-safe per session; separate sessions may live in separate
// threads.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "launcher/cli.h"

namespace hvd::launcher {

struct SshTarget {
  std::string host;
  std::string user;  // empty: the launcher's user
  int port = 22;
  std::string identity_file;  // empty: ssh-agent, then default keys
  HostKeyCheck policy = HostKeyCheck::kAcceptNew;
  std::chrono::seconds timeout{30};
};

class SshSession {
 public:
  // Connects and authenticates. Errors are one line naming the host and the
  // cause: refused, timed out, host key changed or unknown, which keys
  // failed to authenticate.
  static StatusOr<std::unique_ptr<SshSession>> Connect(const SshTarget& target);
  ~SshSession();

  // The address of this end of the connection: the one the remote host
  // reaches us at. And the remote end's address.
  std::string local_address() const { return local_address_; }
  std::string peer_address() const { return peer_address_; }
  void* raw() const { return session_; }  // ssh_session, for hvd-ssh-exec

 private:
  SshSession() = default;
  void* session_ = nullptr;
  std::string local_address_, peer_address_;
};

// "host:port" or "user@host:port" for messages.
std::string DescribeTarget(const SshTarget& target);

// Quotes `s` for a POSIX shell: 'it'\''s'.
std::string ShellQuote(const std::string& s);

}  // namespace hvd::launcher
