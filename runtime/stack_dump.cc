#include "runtime/stack_dump.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

namespace hvd::runtime {
namespace {

std::atomic<int> g_fd{-1};
std::atomic<int> g_signal{0};
std::mutex g_mu;  // one dump at a time: they share the file

// The most a dump keeps of the stacks (a thousand threads' worth).
constexpr size_t kMaxBytes = 1 << 20;

}  // namespace

void SetStackDump(int fd, int signal) {
  g_signal.store(signal);
  g_fd.store(fd);
}

std::string DumpStacks() {
  std::lock_guard<std::mutex> lock(g_mu);
  const int fd = g_fd.load();
  const int sig = g_signal.load();
  if (fd < 0 || sig <= 0) return "";
  if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) return "";
  // The signal must reach this thread now: unblocked for the raise (a
  // signal a thread sends itself is handled before the call returns).
  sigset_t one, was;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_UNBLOCK, &one, &was);
  pthread_kill(pthread_self(), sig);
  pthread_sigmask(SIG_SETMASK, &was, nullptr);
  std::string out;
  char buf[8192];
  off_t at = 0;
  while (out.size() < kMaxBytes) {
    const ssize_t n = pread(fd, buf, sizeof(buf), at);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    at += n;
  }
  return out;
}

}  // namespace hvd::runtime
