#include "launcher/tools/shared_connection.h"

#include <fcntl.h>
#include <libssh/libssh.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "common/parse.h"
#include "launcher/tools/channel_io.h"

namespace hvd::launcher {
namespace {

// A worker whose carrier closed before taking its launch claims the key
// again; no exit status is negative.
constexpr int kRetry = -1;
// How long a worker whose shared connection was lost waits for the
// launcher to stop it (Client).
constexpr int kWaitToBeStoppedMs = 30000;

int Fail(const std::string& what) {
  std::fprintf(stderr, "hvd-ssh-exec: %s\n", what.c_str());
  return 255;
}

sockaddr_un AbstractName(const std::string& key, socklen_t* len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::string name = "hvd-ssh-exec/" + key;
  name.resize(std::min(name.size(), sizeof(a.sun_path) - 1));
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  *len =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return a;
}

// An abstract socket has no file permissions: whoever is at the other end
// must be this user, or it could read the workers' environment (the job's
// secrets) or start commands on the host.
bool SameUser(int fd) {
  ucred c{};
  socklen_t n = sizeof(c);
  return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &n) == 0 &&
         c.uid == geteuid();
}

// Appends what `fd` has; false at its end or on an error.
bool ReadSome(int fd, std::string* buffer) {
  char chunk[32768];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer->append(chunk, static_cast<size_t>(n));
    return true;
  }
}

// The whole frames at the front of `buffer`, taken out; false on a
// malformed one.
bool TakeFrames(std::string* buffer, std::vector<Frame>* frames) {
  frames->clear();
  size_t at = 0;
  for (;;) {
    Frame f;
    auto used = DecodeFrame(std::string_view(*buffer).substr(at), &f);
    if (!used.ok()) return false;
    if (*used == 0) break;
    at += *used;
    frames->push_back(std::move(f));
  }
  buffer->erase(0, at);
  return true;
}

int ExitCode(const std::string& text) {
  auto v = ParseInt64(text, "exit status", 0, 255);
  return v.ok() ? static_cast<int>(*v) : 255;
}

void DrainSignals(int signal_fd) {
  char sig[16];
  while (read(signal_fd, sig, sizeof(sig)) > 0) {
  }
}

// Holds the connection: its own worker is worker 0 of the agent, each
// client's the next number.
class Carrier {
 public:
  Carrier(const SshTarget& target, int listen_fd, int signal_fd)
      : target_(target),
        who_("host " + DescribeTarget(target)),
        listen_fd_(listen_fd),
        signal_fd_(signal_fd) {}
  ~Carrier();

  int Run(const std::string& wrapper, const RemoteLaunch& launch);

 private:
  struct Client {
    int fd = -1;
    uint32_t worker = 0;  // 0: its launch not yet taken
    std::string in;
  };

  // Connects and starts the agent; the error, or "".
  std::string Open(const std::string& wrapper);
  // The connection could not be had: the workers already waiting hear why
  // (the later ones try it themselves).
  void RefuseWaiting(const std::string& why);
  void Accept();
  // False: the client is gone (removed).
  bool Serve(Client& c);
  // Reads what the agent sent; false when the connection is lost.
  bool Pump();
  void Dispatch(const Frame& f);
  void Drop(int fd);
  bool Send(FrameKind kind, uint32_t worker, std::string_view bytes);

  const SshTarget target_;
  const std::string who_;
  int listen_fd_, signal_fd_;
  std::unique_ptr<SshSession> session_;
  ssh_channel ch_ = nullptr;
  std::map<int, Client> clients_;      // by socket
  std::map<uint32_t, int> socket_of_;  // worker -> client socket
  uint32_t next_worker_ = 1;
  std::string from_agent_;
  bool own_done_ = false, lost_ = false;
  int own_code_ = 255;
};

Carrier::~Carrier() {
  if (listen_fd_ >= 0) close(listen_fd_);
  for (auto& [fd, c] : clients_) close(fd);
  if (ch_ != nullptr) {
    ssh_channel_send_eof(ch_);
    ssh_channel_close(ch_);
    ssh_channel_free(ch_);
  }
}

std::string Carrier::Open(const std::string& wrapper) {
  auto session = SshSession::Connect(target_);
  if (!session.ok()) return session.status().message();
  session_ = std::move(*session);
  ssh_session s = static_cast<ssh_session>(session_->raw());
  ch_ = ssh_channel_new(s);
  if (ch_ == nullptr || ssh_channel_open_session(ch_) != SSH_OK) {
    return who_ + ": cannot open a session channel: " + ssh_get_error(s);
  }
  const std::string remote = "exec " + ShellQuote(wrapper) + " --agent";
  if (ssh_channel_request_exec(ch_, remote.c_str()) != SSH_OK) {
    return who_ + ": cannot start " + wrapper + ": " + ssh_get_error(s);
  }
  return "";
}

void Carrier::RefuseWaiting(const std::string& why) {
  const std::string answer =
      EncodeFrame(FrameKind::kStderr, 0, "hvd-ssh-exec: " + why + "\n") +
      EncodeFrame(FrameKind::kExit, 0, "255");
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) break;
    if (SameUser(fd)) (void)WriteAll(fd, answer);
    close(fd);
  }
}

void Carrier::Accept() {
  for (;;) {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    if (!SameUser(fd)) {
      close(fd);
      continue;
    }
    clients_[fd].fd = fd;
  }
}

bool Carrier::Send(FrameKind kind, uint32_t worker, std::string_view bytes) {
  if (lost_ || !ChannelWriteAll(ch_, EncodeFrame(kind, worker, bytes))) {
    lost_ = true;
  }
  return !lost_;
}

void Carrier::Drop(int fd) {
  auto it = clients_.find(fd);
  if (it == clients_.end()) return;
  socket_of_.erase(it->second.worker);
  close(fd);
  clients_.erase(it);
}

bool Carrier::Serve(Client& c) {
  std::vector<Frame> frames;
  if (!ReadSome(c.fd, &c.in) || !TakeFrames(&c.in, &frames)) {
    // Its hvd-ssh-exec is gone: the agent's wrapper ends its worker.
    if (c.worker != 0) Send(FrameKind::kHangUp, c.worker, "");
    Drop(c.fd);
    return false;
  }
  for (const Frame& f : frames) {
    if (f.kind == FrameKind::kLaunch && c.worker == 0) {
      c.worker = next_worker_++;
      socket_of_[c.worker] = c.fd;
      if (Send(FrameKind::kLaunch, c.worker, f.bytes)) {
        (void)WriteAll(c.fd, EncodeFrame(FrameKind::kAccepted, 0, ""));
      }
    } else if (f.kind == FrameKind::kControl && c.worker != 0) {
      Send(FrameKind::kControl, c.worker, f.bytes);
    }
  }
  return true;
}

void Carrier::Dispatch(const Frame& f) {
  if (f.worker == 0) {
    if (f.kind == FrameKind::kStdout) (void)WriteAll(STDOUT_FILENO, f.bytes);
    if (f.kind == FrameKind::kStderr) (void)WriteAll(STDERR_FILENO, f.bytes);
    if (f.kind == FrameKind::kExit) {
      own_done_ = true;
      own_code_ = ExitCode(f.bytes);
    }
    return;
  }
  auto it = socket_of_.find(f.worker);
  if (it == socket_of_.end()) return;  // its hvd-ssh-exec left
  const int fd = it->second;
  (void)WriteAll(fd, EncodeFrame(f.kind, 0, f.bytes));
  if (f.kind == FrameKind::kExit) Drop(fd);
}

bool Carrier::Pump() {
  char buf[32768];
  int n;
  while ((n = ssh_channel_read_nonblocking(ch_, buf, sizeof(buf), 1)) > 0) {
    (void)WriteAll(STDERR_FILENO, std::string_view(buf, n));
  }
  while ((n = ssh_channel_read_nonblocking(ch_, buf, sizeof(buf), 0)) > 0) {
    from_agent_.append(buf, static_cast<size_t>(n));
  }
  std::vector<Frame> frames;
  if (n == SSH_ERROR || !TakeFrames(&from_agent_, &frames)) return false;
  for (const Frame& f : frames) Dispatch(f);
  // The agent ends only when the connection is closed from this side.
  return !(ssh_channel_is_eof(ch_) || ssh_channel_is_closed(ch_));
}

int Carrier::Run(const std::string& wrapper, const RemoteLaunch& launch) {
  if (std::string why = Open(wrapper); !why.empty()) {
    RefuseWaiting(why);
    return Fail(why);
  }
  ssh_session s = static_cast<ssh_session>(session_->raw());
  Send(FrameKind::kLaunch, 0, EncodeRemoteLaunch(launch));
  std::vector<pollfd> fds;
  while (!lost_ && !(own_done_ && (own_code_ != 0 || clients_.empty()))) {
    fds.assign({{ssh_get_fd(s), POLLIN, 0},
                {listen_fd_, POLLIN, 0},
                {signal_fd_, POLLIN, 0}});
    for (const auto& [fd, c] : clients_) fds.push_back({fd, POLLIN, 0});
    // libssh may hold data it read already: the timeout bounds its wait.
    if (poll(fds.data(), fds.size(), 50) < 0 && errno != EINTR) break;
    if (fds[2].revents) {
      DrainSignals(signal_fd_);
      if (!own_done_) Send(FrameKind::kControl, 0, "TERM\n");
    }
    if (fds[1].revents) Accept();
    for (size_t i = 3; i < fds.size(); ++i) {
      auto it = clients_.find(fds[i].fd);
      if (fds[i].revents && it != clients_.end()) Serve(it->second);
    }
    if (!Pump()) lost_ = true;
  }
  // No one may join a connection that is closing.
  close(listen_fd_);
  listen_fd_ = -1;
  if (lost_ && !own_done_) {
    return Fail(who_ + ": connection lost (" + ssh_get_error(s) + ")");
  }
  return own_code_;
}

// Hands the launch to the carrier at `fd` and relays its worker's frames.
int Client(int fd, const RemoteLaunch& launch, int signal_fd,
           const std::string& who) {
  if (!SameUser(fd)) {
    close(fd);
    return Fail(who +
                ": the shared connection's socket belongs to another "
                "user");
  }
  bool accepted = false, terminated = false;
  if (!WriteAll(
          fd, EncodeFrame(FrameKind::kLaunch, 0, EncodeRemoteLaunch(launch)))) {
    close(fd);
    return kRetry;
  }
  std::string in;
  std::vector<Frame> frames;
  for (;;) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {signal_fd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents) {
      DrainSignals(signal_fd);
      terminated = true;
      (void)WriteAll(fd, EncodeFrame(FrameKind::kControl, 0, "TERM\n"));
    }
    if (!fds[0].revents) continue;
    if (!ReadSome(fd, &in) || !TakeFrames(&in, &frames)) break;
    for (const Frame& f : frames) {
      if (f.kind == FrameKind::kAccepted) accepted = true;
      if (f.kind == FrameKind::kStdout) (void)WriteAll(STDOUT_FILENO, f.bytes);
      if (f.kind == FrameKind::kStderr) (void)WriteAll(STDERR_FILENO, f.bytes);
      if (f.kind == FrameKind::kExit) {
        close(fd);
        return ExitCode(f.bytes);
      }
    }
  }
  close(fd);
  // Told to stop before anything ran: nothing to start again.
  if (!accepted) return terminated ? 128 + SIGTERM : kRetry;
  // The carrier is a worker's process too, and its end is that worker's
  // failure or the lost connection's, which it reports itself: the job is
  // stopping. Exiting now could put this line first, naming the wrong
  // rank, so it waits to be stopped (and stops itself if it is not).
  pollfd stop{signal_fd, POLLIN, 0};
  if (!terminated) (void)poll(&stop, 1, kWaitToBeStoppedMs);
  return Fail(who +
              ": connection lost (the worker that held this host's shared "
              "connection is gone)");
}

}  // namespace

int RunShared(const SshTarget& target, const std::string& wrapper,
              const RemoteLaunch& launch, const std::string& key,
              int signal_fd) {
  const std::string who = "host " + DescribeTarget(target);
  const auto deadline = std::chrono::steady_clock::now() + target.timeout;
  socklen_t len = 0;
  const sockaddr_un name = AbstractName(key, &len);
  const sockaddr* addr = reinterpret_cast<const sockaddr*>(&name);
  for (;;) {
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (l < 0) return Fail(std::string("socket: ") + std::strerror(errno));
    if (bind(l, addr, len) == 0 && listen(l, 128) == 0) {
      return Carrier(target, l, signal_fd).Run(wrapper, launch);
    }
    const int err = errno;
    close(l);
    if (err != EADDRINUSE) {
      return Fail(who + ": cannot claim the host's shared connection: " +
                  std::strerror(err));
    }
    int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c >= 0 && connect(c, addr, len) == 0) {
      const int code = Client(c, launch, signal_fd, who);
      if (code != kRetry) return code;
    } else if (c >= 0) {
      close(c);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Fail(who +
                  ": no worker of this host held its shared connection "
                  "within the start timeout");
    }
    usleep(10000);
  }
}

}  // namespace hvd::launcher
