// Runs a command for a test: captures stdout and stderr, bounds its time,
// and offers the pid for signals. Ends only the process it started.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hvd::testing {

struct Result {
  int exit_code = -1;  // 128+N for signal N; -1 when it had to be killed
  bool timed_out = false;
  std::string out;
  std::string err;
  std::chrono::milliseconds took{0};
};

class Subprocess {
 public:
  // Starts argv with the test's environment plus `extra_env` ("K=V").
  explicit Subprocess(const std::vector<std::string>& argv,
                      const std::vector<std::string>& extra_env = {});
  ~Subprocess();
  pid_t pid() const { return pid_; }
  // Waits up to `timeout`; SIGKILLs the process if it is still running.
  Result Wait(std::chrono::milliseconds timeout);
  // What it has written to stderr so far.
  std::string StderrSoFar();
  // Waits until stderr matches `pattern` (ECMAScript regex) and returns
  // the first capture group ("" when none or when it timed out).
  std::string WaitForStderr(const std::string& pattern,
                            std::chrono::milliseconds timeout);
  // The same for stdout.
  std::string StdoutSoFar();
  std::string WaitForStdout(const std::string& pattern,
                            std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  std::mutex mu_;
  std::string out_, err_;  // guarded by mu_
  std::thread reader_;
  std::chrono::steady_clock::time_point start_;
  bool waited_ = false;
};

Result RunCommand(const std::vector<std::string>& argv,
                  std::chrono::milliseconds timeout,
                  const std::vector<std::string>& extra_env = {});

// Reads a /proc file whole into `out`; false when it cannot (the process
// ended, even while it was being read: ESRCH, which a stream would throw).
bool ReadProcFile(const std::string& path, std::string* out);

// True while `pid` exists and is not a zombie.
bool ProcessAlive(pid_t pid);

std::vector<std::string> Lines(const std::string& text);

}  // namespace hvd::testing
