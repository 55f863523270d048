#include "tests/util/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

extern char** environ;

namespace hvd::testing {

Subprocess::Subprocess(const std::vector<std::string>& argv,
                       const std::vector<std::string>& extra_env) {
  // `extra_env` overrides the test's own variables of the same name.
  std::vector<std::string> env;
  auto overridden = [&](const std::string& kv) {
    std::string key = kv.substr(0, kv.find('=') + 1);
    for (const std::string& e : extra_env) {
      if (e.rfind(key, 0) == 0) return true;
    }
    return false;
  };
  for (char** e = environ; *e; ++e) {
    if (!overridden(*e)) env.emplace_back(*e);
  }
  for (const std::string& kv : extra_env) env.push_back(kv);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) abort();
  start_ = std::chrono::steady_clock::now();
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  reader_ = std::thread([this] {
    pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    int open = 2;
    char buf[65536];
    while (open > 0) {
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || !fds[i].revents) continue;
        ssize_t n = read(fds[i].fd, buf, sizeof(buf));
        if (n > 0) {
          std::lock_guard<std::mutex> lock(mu_);
          (i == 0 ? out_ : err_).append(buf, n);
        } else if (n == 0 || errno != EINTR) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open;
        }
      }
    }
  });
}

Subprocess::~Subprocess() {
  if (!waited_) Wait(std::chrono::milliseconds(0));
}

Result Subprocess::Wait(std::chrono::milliseconds timeout) {
  Result r;
  auto deadline = start_ + timeout;
  int status = 0;
  for (;;) {
    pid_t got = waitpid(pid_, &status, WNOHANG);
    if (got == pid_) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      r.timed_out = true;
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  waited_ = true;
  r.took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start_);
  // Output may still be held open by leftovers; the reader ends at EOF.
  reader_.join();
  std::lock_guard<std::mutex> lock(mu_);
  r.out = out_;
  r.err = err_;
  if (r.timed_out) {
    r.exit_code = -1;
  } else if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.exit_code = 128 + WTERMSIG(status);
  }
  return r;
}

std::string Subprocess::StderrSoFar() {
  std::lock_guard<std::mutex> lock(mu_);
  return err_;
}

std::string Subprocess::StdoutSoFar() {
  std::lock_guard<std::mutex> lock(mu_);
  return out_;
}

namespace {

std::string WaitFor(const std::function<std::string()>& so_far,
                    const std::string& pattern,
                    std::chrono::milliseconds timeout) {
  const std::regex re(pattern);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string text = so_far();
    std::smatch m;
    if (std::regex_search(text, m, re))
      return m.size() > 1 ? m[1].str() : m[0].str();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

}  // namespace

std::string Subprocess::WaitForStderr(const std::string& pattern,
                                      std::chrono::milliseconds timeout) {
  return WaitFor([this] { return StderrSoFar(); }, pattern, timeout);
}

std::string Subprocess::WaitForStdout(const std::string& pattern,
                                      std::chrono::milliseconds timeout) {
  return WaitFor([this] { return StdoutSoFar(); }, pattern, timeout);
}

Result RunCommand(const std::vector<std::string>& argv,
                  std::chrono::milliseconds timeout,
                  const std::vector<std::string>& extra_env) {
  Subprocess p(argv, extra_env);
  return p.Wait(timeout);
}

bool ReadProcFile(const std::string& path, std::string* out) {
  out->clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) out->append(buf, n);
  ::close(fd);
  return n == 0;
}

bool ProcessAlive(pid_t pid) {
  std::string content;
  if (!ReadProcFile("/proc/" + std::to_string(pid) + "/stat", &content)) {
    return false;
  }
  size_t close_paren = content.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 >= content.size()) {
    return false;
  }
  char state = content[close_paren + 2];
  return state != 'Z' && state != 'X';
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

}  // namespace hvd::testing
