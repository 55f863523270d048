#include "launcher/elastic/discovery.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hvd::launcher::elastic {

StatusOr<std::string> RunScript(const std::string& script,
                                std::chrono::milliseconds timeout) {
  const std::string what = "host discovery script '" + script + "'";
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return Status::Internal(what, std::string("pipe: ") + std::strerror(errno));
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return Status::Internal(what, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(fds[1], STDOUT_FILENO);
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no race with the child's own call
  ::close(fds[1]);
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      timed_out = true;
      break;
    }
    char buf[4096];
    ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: every writer closed
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  // Wait for the script to exit without reaping it (WNOWAIT): while it is
  // unreaped its group id cannot be reused, so the group can be killed
  // safely afterwards, taking along whatever it left running (`sleep &`).
  while (!timed_out) {
    siginfo_t info{};
    int r = ::waitid(P_PID, static_cast<id_t>(pid), &info,
                     WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && info.si_pid == pid) break;
    if (r < 0 && errno != EINTR) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      timed_out = true;
      break;
    }
    ::usleep(2000);
  }
  ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Status::DeadlineExceeded(what, "did not finish within " +
                                              std::to_string(timeout.count()) +
                                              " ms; it was stopped");
  }
  if (WIFSIGNALED(status)) {
    return Status::Unavailable(
        what, "was killed by signal " + std::to_string(WTERMSIG(status)));
  }
  if (WEXITSTATUS(status) != 0) {
    return Status::Unavailable(
        what, "exited with status " + std::to_string(WEXITSTATUS(status)));
  }
  return out;
}

HostDiscovery::HostDiscovery(std::string script, int default_slots,
                             std::chrono::milliseconds timeout)
    : script_(std::move(script)),
      default_slots_(default_slots),
      timeout_(timeout) {}

StatusOr<std::vector<HostSpec>> HostDiscovery::Poll() {
  HVD_ASSIGN_OR_RETURN(std::string out, RunScript(script_, timeout_));
  HVD_ASSIGN_OR_RETURN(std::vector<HostSpec> hosts,
                       ParseDiscoveredHosts(out, default_slots_));
  last_ = hosts;
  answered_ = true;
  return hosts;
}

}  // namespace hvd::launcher::elastic
