#include "tests/util/job_pids.h"

#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/util/subprocess.h"

namespace hvd::testing {

std::vector<pid_t> ReadPids(const std::string& dir) {
  std::vector<pid_t> pids;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".pid") continue;
    std::ifstream f(e.path());
    pid_t p = 0;
    if (f >> p) pids.push_back(p);
  }
  return pids;
}

bool WaitForFile(const std::string& path, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

bool WaitForPids(const std::string& dir, size_t count,
                 std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ReadPids(dir).size() >= count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::vector<pid_t> Survivors(const std::vector<pid_t>& pids,
                             std::chrono::milliseconds grace) {
  auto deadline = std::chrono::steady_clock::now() + grace;
  std::vector<pid_t> alive;
  for (pid_t p : pids) {
    while (ProcessAlive(p) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (ProcessAlive(p)) alive.push_back(p);
  }
  return alive;
}

}  // namespace hvd::testing
