// test_worker's training modes (test_worker.cc documents the flags):
// --steps' steps of one kind, and --elastic-job's elastic training.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "hvd/status.h"

namespace hvd::testing {

// Writes `pid` to `path` at once (through a rename).
void WritePid(const std::string& path, pid_t pid);

// One training step of the elastic modes: the ranks' average, plus one.
hvd::Status AverageAndAddOne(std::vector<float>& weights);

// When --steps' job may stop: rank 0 decides and every rank learns it in
// one allreduce, so that all run the same number of steps.
struct StopWhen {
  std::string file;        // once it exists (the test has seen enough)
  double min_seconds = 0;  // once this long has passed since the start
  bool set() const { return !file.empty() || min_seconds > 0; }
};

// --steps N --work KIND; the process's exit code.
int Steps(int steps, const std::string& work, const StopWhen& when,
          bool say_steps);

// --elastic-job N; the process's exit code.
int ElasticJob(int steps, int commit_every, int step_ms,
               const std::string& pid_dir, const std::string& fail_host);

}  // namespace hvd::testing
