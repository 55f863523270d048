#include "launcher/ssh.h"

#include <arpa/inet.h>
#include <libssh/libssh.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>

namespace hvd::launcher {
namespace {

std::string SocketAddress(int fd, bool peer) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len)
                : getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  if (rc != 0) return "";
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, buf,
              sizeof(buf));
  } else if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, buf,
              sizeof(buf));
  }
  return buf;
}

// The user's ~/.ssh, from $HOME as OpenSSH's user tools see it. Worked out
// once: the hosts are checked from several threads, and getpwuid's result
// is a static buffer.
std::string SshDir() {
  static const std::string dir = [] {
    const char* home = std::getenv("HOME");
    if (home == nullptr || *home == '\0') {
      passwd* pw = getpwuid(getuid());
      home = pw ? pw->pw_dir : "/";
    }
    return std::string(home) + "/.ssh";
  }();
  return dir;
}

}  // namespace

std::string DescribeTarget(const SshTarget& t) {
  std::string host =
      t.host.find(':') != std::string::npos ? "[" + t.host + "]" : t.host;
  return (t.user.empty() ? "" : t.user + "@") + host + ":" +
         std::to_string(t.port);
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

SshSession::~SshSession() {
  if (session_ != nullptr) {
    ssh_session s = static_cast<ssh_session>(session_);
    ssh_disconnect(s);
    ssh_free(s);
  }
}

StatusOr<std::unique_ptr<SshSession>> SshSession::Connect(const SshTarget& t) {
  static std::once_flag init;
  std::call_once(init, [] { ssh_init(); });
  const std::string who = "host " + DescribeTarget(t);
  std::unique_ptr<SshSession> out(new SshSession());
  ssh_session s = ssh_new();
  if (s == nullptr) return Status::ResourceExhausted(who, "ssh_new failed");
  out->session_ = s;
  long timeout = static_cast<long>(t.timeout.count());
  int port = t.port;
  int no = 0;
  std::string dir = SshDir();
  std::string known = dir + "/known_hosts";
  ssh_options_set(s, SSH_OPTIONS_HOST, t.host.c_str());
  ssh_options_set(s, SSH_OPTIONS_PORT, &port);
  ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &timeout);
  ssh_options_set(s, SSH_OPTIONS_SSH_DIR, dir.c_str());
  ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, known.c_str());
  // The user's ~/.ssh/config could redirect the host; the target is exactly
  // what -H says.
  ssh_options_set(s, SSH_OPTIONS_PROCESS_CONFIG, &no);
  if (!t.user.empty()) ssh_options_set(s, SSH_OPTIONS_USER, t.user.c_str());

  if (ssh_connect(s) != SSH_OK) {
    std::string err = ssh_get_error(s);
    std::string hint = "check that sshd runs there and the port is right (-p)";
    if (err.find("refused") != std::string::npos) {
      return Status::Unavailable(who, "connection refused; " + hint);
    }
    if (err.find("imeout") != std::string::npos ||
        err.find("timed out") != std::string::npos) {
      return Status::DeadlineExceeded(
          who, "connection timed out after " +
                   std::to_string(t.timeout.count()) +
                   " s; check the address and the network");
    }
    return Status::Unavailable(who, "cannot connect: " + err + "; " + hint);
  }
  int fd = ssh_get_fd(s);
  out->local_address_ = SocketAddress(fd, false);
  out->peer_address_ = SocketAddress(fd, true);

  if (t.policy != HostKeyCheck::kOff) {
    switch (ssh_session_is_known_server(s)) {
      case SSH_KNOWN_HOSTS_OK:
        break;
      case SSH_KNOWN_HOSTS_CHANGED:
      case SSH_KNOWN_HOSTS_OTHER:
        return Status::PermissionDenied(
            who, "host key changed: it differs from the one in " + known +
                     "; if the host was reinstalled, remove its line there");
      case SSH_KNOWN_HOSTS_UNKNOWN:
      case SSH_KNOWN_HOSTS_NOT_FOUND: {
        if (t.policy == HostKeyCheck::kStrict) {
          return Status::PermissionDenied(
              who,
              "host key unknown and --ssh-host-key-check is strict; add "
              "it to " +
                  known + " (ssh-keyscan) or use accept-new");
        }
        // Parallel checks of several hosts append to one file.
        static std::mutex known_hosts_mu;
        std::lock_guard<std::mutex> lock(known_hosts_mu);
        mkdir(dir.c_str(), 0700);  // libssh races itself creating it
        if (ssh_session_update_known_hosts(s) != SSH_OK) {
          return Status::PermissionDenied(
              who,
              "cannot add the host key to " + known + ": " + ssh_get_error(s));
        }
        break;
      }
      case SSH_KNOWN_HOSTS_ERROR:
      default:
        return Status::Internal(
            who, std::string("checking the host key: ") + ssh_get_error(s));
    }
  }

  if (!t.identity_file.empty()) {
    ssh_key key = nullptr;
    if (ssh_pki_import_privkey_file(t.identity_file.c_str(), nullptr, nullptr,
                                    nullptr, &key) != SSH_OK) {
      return Status::InvalidArgument(
          "-i " + t.identity_file,
          "cannot read the private key (missing, or protected by a "
          "passphrase: load it into ssh-agent instead)");
    }
    int rc = ssh_userauth_publickey(s, nullptr, key);
    ssh_key_free(key);
    if (rc != SSH_AUTH_SUCCESS) {
      return Status::PermissionDenied(
          who, "authentication failed with key " + t.identity_file +
                   " (is its public key in the host's authorized_keys?)");
    }
    return out;
  }
  if (std::getenv("SSH_AUTH_SOCK") != nullptr &&
      ssh_userauth_agent(s, nullptr) == SSH_AUTH_SUCCESS) {
    return out;
  }
  if (ssh_userauth_publickey_auto(s, nullptr, nullptr) == SSH_AUTH_SUCCESS) {
    return out;
  }
  return Status::PermissionDenied(
      who,
      std::string("authentication failed with ") +
          (std::getenv("SSH_AUTH_SOCK") ? "the ssh-agent's keys and " : "") +
          "the default keys in " + dir + " (give one with -i)");
}

}  // namespace hvd::launcher
