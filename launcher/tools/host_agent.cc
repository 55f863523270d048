#include "launcher/tools/host_agent.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "launcher/remote_protocol.h"
#include "launcher/tools/channel_io.h"

namespace hvd::launcher {
namespace {

int g_wake[2];
volatile sig_atomic_t g_session_gone = 0;

void OnChild(int) {
  int saved = errno;
  (void)!write(g_wake[1], "c", 1);
  errno = saved;
}

void OnHangUp(int) {
  int saved = errno;
  g_session_gone = 1;
  (void)!write(g_wake[1], "h", 1);
  errno = saved;
}

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// One worker's wrapper: a child running this program in its one-worker
// mode, on pipes of ours.
struct Wrapper {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;  // -1 once closed
  bool exited = false;
  int status = 0;
};

// Forks `self` as a one-worker wrapper; false (errno set) when it cannot.
bool StartWrapper(const std::string& self, Wrapper* w) {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  // A failure leaves no descriptor behind (the agent runs on, for the
  // other workers), and keeps its errno for the message.
  auto fail = [&] {
    const int saved = errno;
    for (int* fd : {&in[0], &in[1], &out[0], &out[1], &err[0], &err[1]}) {
      CloseFd(*fd);
    }
    errno = saved;
    return false;
  };
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
      pipe2(err, O_CLOEXEC) != 0) {
    return fail();
  }
  pid_t pid = fork();
  if (pid < 0) return fail();
  if (pid == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    signal(SIGPIPE, SIG_DFL);
    execl(self.c_str(), self.c_str(), static_cast<char*>(nullptr));
    std::fprintf(stderr, "hvd-remote-exec: cannot run %s: %s\n", self.c_str(),
                 std::strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  *w = Wrapper{pid, in[1], out[0], err[0]};
  return true;
}

class Agent {
 public:
  explicit Agent(std::string self) : self_(std::move(self)) {}
  int Run();

 private:
  void Take(const Frame& f);
  // The launcher's side is gone: every wrapper's stdin closes, so each
  // ends its worker.
  void HangUpAll();
  void ReadOutput(uint32_t id, int& fd, FrameKind kind);
  void Reap();
  void Send(FrameKind kind, uint32_t worker, std::string_view bytes);

  const std::string self_;
  std::map<uint32_t, Wrapper> wrappers_;
  std::string in_;
  bool stdin_open_ = true, stdout_open_ = true;
};

void Agent::Send(FrameKind kind, uint32_t worker, std::string_view bytes) {
  if (stdout_open_ &&
      !WriteAll(STDOUT_FILENO, EncodeFrame(kind, worker, bytes))) {
    stdout_open_ = false;
    HangUpAll();
  }
}

void Agent::HangUpAll() {
  stdin_open_ = false;
  for (auto& [id, w] : wrappers_) CloseFd(w.in);
}

void Agent::Take(const Frame& f) {
  auto it = wrappers_.find(f.worker);
  if (f.kind == FrameKind::kLaunch && it == wrappers_.end()) {
    Wrapper w;
    if (!StartWrapper(self_, &w)) {
      Send(FrameKind::kStderr, f.worker,
           std::string("hvd-remote-exec: cannot start a worker's wrapper: ") +
               std::strerror(errno) + "\n");
      Send(FrameKind::kExit, f.worker, "127");
      return;
    }
    // The wrapper reads its launch at once; a full pipe only waits for it.
    (void)WriteAll(w.in, f.bytes);
    wrappers_[f.worker] = w;
    return;
  }
  if (it == wrappers_.end()) return;
  if (f.kind == FrameKind::kControl && it->second.in >= 0) {
    (void)WriteAll(it->second.in, f.bytes);
  }
  if (f.kind == FrameKind::kHangUp) CloseFd(it->second.in);
}

void Agent::ReadOutput(uint32_t id, int& fd, FrameKind kind) {
  char chunk[32768];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n > 0) {
      Send(kind, id, std::string_view(chunk, static_cast<size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    CloseFd(fd);
    return;
  }
}

void Agent::Reap() {
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    for (auto& [id, w] : wrappers_) {
      if (w.pid != pid) continue;
      w.exited = true;
      w.status = WIFEXITED(status)     ? WEXITSTATUS(status)
                 : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                       : 1;
    }
  }
  // A worker's exit is its last frame: after all of its output.
  for (auto it = wrappers_.begin(); it != wrappers_.end();) {
    Wrapper& w = it->second;
    if (w.exited && w.out < 0 && w.err < 0) {
      Send(FrameKind::kExit, it->first, std::to_string(w.status));
      CloseFd(w.in);
      it = wrappers_.erase(it);
    } else {
      ++it;
    }
  }
}

int Agent::Run() {
  std::vector<pollfd> fds;
  std::vector<std::pair<uint32_t, bool>> owners;  // (wrapper, stderr?)
  std::vector<Frame> frames;
  char chunk[65536];
  while (stdin_open_ || !wrappers_.empty()) {
    fds.assign(
        {{g_wake[0], POLLIN, 0}, {stdin_open_ ? STDIN_FILENO : -1, POLLIN, 0}});
    owners.clear();
    for (const auto& [id, w] : wrappers_) {
      if (w.out >= 0)
        fds.push_back({w.out, POLLIN, 0}), owners.push_back({id, false});
      if (w.err >= 0)
        fds.push_back({w.err, POLLIN, 0}), owners.push_back({id, true});
    }
    if (poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR) return 1;
    if (fds[0].revents) {
      while (read(g_wake[0], chunk, sizeof(chunk)) > 0) {
      }
    }
    if (g_session_gone && stdin_open_) HangUpAll();
    if (stdin_open_ && fds[1].revents) {
      ssize_t n = read(STDIN_FILENO, chunk, sizeof(chunk));
      if (n > 0) {
        in_.append(chunk, static_cast<size_t>(n));
        size_t at = 0;
        for (;;) {
          Frame f;
          auto used = DecodeFrame(std::string_view(in_).substr(at), &f);
          if (!used.ok()) {
            std::fprintf(stderr, "hvd-remote-exec: %s\n",
                         used.status().ToString().c_str());
            HangUpAll();
            break;
          }
          if (*used == 0) break;
          at += *used;
          Take(f);
        }
        in_.erase(0, at);
      } else if (n == 0 || errno != EINTR) {
        HangUpAll();
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      Wrapper& w = wrappers_[owners[i - 2].first];
      if (owners[i - 2].second) {
        ReadOutput(owners[i - 2].first, w.err, FrameKind::kStderr);
      } else {
        ReadOutput(owners[i - 2].first, w.out, FrameKind::kStdout);
      }
    }
    Reap();
  }
  return 0;
}

}  // namespace

int RunHostAgent() {
  if (pipe2(g_wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::fprintf(stderr, "hvd-remote-exec: pipe: %s\n", std::strerror(errno));
    return 127;
  }
  signal(SIGPIPE, SIG_IGN);
  struct sigaction child {};
  child.sa_handler = OnChild;
  child.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &child, nullptr);
  // sshd's session process gone: as the end of stdin.
  struct sigaction hup {};
  hup.sa_handler = OnHangUp;
  sigaction(SIGHUP, &hup, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGHUP);
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) {
    std::fprintf(stderr, "hvd-remote-exec: cannot find itself: %s\n",
                 std::strerror(errno));
    return 127;
  }
  return Agent(std::string(self, static_cast<size_t>(n))).Run();
}

}  // namespace hvd::launcher
