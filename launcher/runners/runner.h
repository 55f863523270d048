// A runner is one way of starting a job's workers: on this machine and
// over SSH (LocalSshRunner), through a command template (TemplateRunner),
// as one srun step (SrunRunner), through mpirun (MpirunRunner), or as an
// elastic job whose workers come and go (ElasticRunner). ChooseRunner
// picks one from the command line; RunJob runs any of them the same way:
//
//   Prepare      everything that can fail before anything starts
//   (signals)    the launcher's handlers go in
//   OpenRendezvous
//   Workers      what to start where, and how to tell its output apart
//   (supervise)  the supervisor runs them to the end
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/cli.h"
#include "launcher/job_rendezvous.h"
#include "launcher/plan.h"
#include "launcher/spawner.h"
#include "launcher/step_output.h"
#include "launcher/supervisor.h"

namespace hvd::launcher {

// What every runner gets from the launcher's edge.
struct RunnerContext {
  LaunchOptions options;
  // The launcher's environment, as the workers inherit it.
  std::map<std::string, std::string> env;
  // Where hvd-ssh-exec and hvd-remote-exec are.
  std::string helpers;
};

// What a runner starts, once its rendezvous is up.
struct Launch {
  // One process each (index = the rank its output carries), on hosts[i].
  std::vector<ProcessSpec> processes;
  std::vector<std::string> hosts;
  // Set when the one process runs every worker as a task.
  std::optional<TaskStep> step;
  // Set for an elastic job: it starts and stops the workers itself
  // (`processes` is empty). Owned by the runner.
  WorkerDriver* driver = nullptr;
  // Workers the job's watch expects.
  int size = 0;
  // Workers not joined by then are named and the job stopped; 0: none.
  std::chrono::milliseconds join_timeout{0};
};

class Runner {
 public:
  virtual ~Runner() = default;
  // Checks what can fail before anything starts. An error is said in one
  // line (one per host) and ends the launcher: kUnavailable (a host could
  // not be reached) with status 1, anything else as a usage error (2).
  virtual Status Prepare() = 0;
  // The job's rendezvous: served here or by a daemon.
  virtual StatusOr<std::unique_ptr<JobRendezvous>> OpenRendezvous() = 0;
  // What to start where on `job`'s rendezvous.
  virtual StatusOr<Launch> Workers(JobRendezvous& job) = 0;
};

// The runner the command line asks for.
std::unique_ptr<Runner> ChooseRunner(const RunnerContext& context);

// Prepares `runner`, opens its rendezvous, starts its workers and
// supervises them to the end; the launcher's exit status.
int RunJob(Runner& runner, const RunnerContext& context);

// What runners share.
// hvd-remote-exec, as HVD_REMOTE_EXEC (tests) or the helpers' directory
// names it.
std::string RemoteExecPath(const RunnerContext& context);
// The launcher's working directory, where every worker starts ("" when
// it cannot be told).
std::string WorkingDirectory();
// The address of --network-interface's first interface; "" when none is
// given.
StatusOr<std::string> InterfaceAddressOf(const LaunchOptions& options);
// `program` as the launcher's PATH finds it.
StatusOr<std::string> FindProgram(const RunnerContext& context,
                                  const std::string& program);
// A local worker's command that cannot run is a usage error caught before
// anything starts; remote hosts check their own PATH.
Status CheckLocalCommand(const RunnerContext& context, const LaunchPlan& plan);

}  // namespace hvd::launcher
