// A real Slurm for tests: munged on a socket of the test's own, slurmctld,
// and one `slurmd -N NAME` per node, all on 127.0.0.1 with ports of their
// own, from a configuration generated in the test's folder. Ends only the
// daemons it started (by pid). ok() is false, with the reason, where
// Slurm's or munge's programs are missing.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "tests/util/temp_dir.h"

namespace hvd::testing {

class SlurmCluster {
 public:
  // Nodes are named hvdn1, hvdn2, ...; each has `cpus` CPUs.
  SlurmCluster(const TempDir& dir, int nodes, int cpus);
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  // What a client (salloc, sbatch, squeue, scancel) needs: SLURM_CONF.
  std::vector<std::string> env() const { return {"SLURM_CONF=" + conf_}; }
  std::string node(int i) const { return "hvdn" + std::to_string(i + 1); }

 private:
  pid_t Start(const std::vector<std::string>& argv, const std::string& log);
  // Waits until `nodes` nodes are idle: true, or false with error_ saying
  // why (a daemon that ended says so at once, with its last errors).
  bool WaitIdle(int nodes);
  void StopAll();

  std::string dir_, conf_, error_;
  struct Daemon {
    pid_t pid;
    std::string log;  // its stdout and stderr
  };
  std::vector<Daemon> daemons_;  // in start order; stopped in reverse
  bool ok_ = false;
};

}  // namespace hvd::testing
