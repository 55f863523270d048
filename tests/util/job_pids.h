// The pid files test workers leave (hvd_test_worker --pid-dir), the files
// that say a process is ready, and the check that none of those processes
// outlived its job.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace hvd::testing {

// Pids from every DIR/*.pid file.
std::vector<pid_t> ReadPids(const std::string& dir);

// Waits until `path` exists (a process's word that it got somewhere);
// false on timeout.
bool WaitForFile(const std::string& path, std::chrono::milliseconds timeout);

// Waits until at least `count` pid files exist; false on timeout.
bool WaitForPids(const std::string& dir, size_t count,
                 std::chrono::milliseconds timeout);

// The pids still alive after up to `grace` (the kernel may take a moment
// to deliver the last SIGKILLs). Empty when the job left nothing behind.
std::vector<pid_t> Survivors(
    const std::vector<pid_t>& pids,
    std::chrono::milliseconds grace = std::chrono::seconds(10));

}  // namespace hvd::testing
