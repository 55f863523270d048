// Supervisor: starts the planned workers, forwards their output with rank
// prefixes, and applies the exit policy.
//
// Policy (Horovod's, made stricter):
//  - The first worker to exit non-zero (or die by signal S, counted as
//    128+S) is reported with its rank, host and status; every other worker
//    gets SIGTERM on its whole process group, then SIGKILL after the grace
//    period. The launcher exits with the first failing worker's status.
//  - SIGINT/SIGTERM/SIGHUP to the launcher stop every worker the same way
//    and exit 128+signal; a second one kills at once. SIGUSR1 dumps every
//    worker's flight recorder and the job goes on; so does a worker's ask
//    (a stall); a failure dumps the others' before they are stopped.
//  - Workers still running but not joined after the start timeout are
//    named, and the job is stopped (exit 1).
//  - When the job ends, whatever is left in any worker's process group is
//    killed, so nothing of the job outlives the launcher.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/plan.h"
#include "launcher/spawner.h"
#include "launcher/step_output.h"
#include "rendezvous/members.h"

namespace hvd::launcher {

struct SupervisorOptions {
  std::chrono::milliseconds grace{5000};
  // Workers still running but not joined after this are named and the
  // job stopped (--join-timeout); 0: no limit.
  std::chrono::milliseconds join_timeout{0};
  // Ranks that have joined the rendezvous so far; empty function: no
  // start-timeout check.
  std::function<std::vector<int>()> joined_ranks;
  // A fixed job's worker ended, with its exit status (128 + signal when
  // killed): recorded in the rendezvous, where the members list carries it
  // to workers that wait for it. Empty function: not recorded.
  std::function<void(const std::string& host, int slot, int exit_status)>
      exited;
  // The job's members (rendezvous/members.h): once a worker exits 0 while
  // others run, read about once a second to say when a running rank is in
  // a later generation than the one that left (it waits for it in init()).
  // Empty function: not watched.
  std::function<std::vector<rendezvous::Member>()> members;
  // SIGUSR1: dumps every worker's flight recorder and returns the lines to
  // say (launcher/flight_dump.h). Empty function: the signal is ignored.
  std::function<std::vector<std::string>()> dump_flight;
  // A fixed job's first failure (`who`: "rank R (host H)"), before the
  // others are stopped: dumps their flight recorders and returns the lines
  // to say. Empty function: none.
  std::function<std::vector<std::string>(const std::string& who)>
      dump_on_failure;
  // Looked at about once a second while workers run: answers a worker's
  // ask for every rank's flight recorder (a stall) and returns the lines
  // to say; sets `*ends_job` to the report's finding when the stall
  // inspector ends the job after it (said again in the job's last line).
  // Empty function: not looked at.
  std::function<std::vector<std::string>(std::string* ends_job)> flight_asked;
  bool verbose = false;
  // --prefix-output-with-timestamp
  bool timestamps = false;
  // --output-filename: also write DIR/rank.N/stdout and stderr (the same
  // prefixed output, as Horovod).
  std::string output_dir;
  // Path of hvd-remote-exec, run as a watchdog that kills every worker's
  // process group if the launcher is killed (PR_SET_PDEATHSIG reaches only
  // the workers themselves, not what they started). Empty: none.
  std::string watchdog;
  // The job whose shared-memory names the watchdog removes once the
  // workers are gone (common/shm_names.h). Empty: none.
  std::string job_id;
  // Set: Run gets one process (an srun step, mpirun) whose task i is rank
  // i, on step->hosts[i]. Its output lines carry the program's task
  // labels, which become rank prefixes; a task's failure marker or the
  // program's report names the first failing rank.
  std::optional<TaskStep> step;
};

// An elastic job's driver as the supervisor sees it: told of the exit of
// every worker it did not ask to stop, and asked on every wake-up (at
// least once a second) which workers to stop and start.
class WorkerDriver {
 public:
  struct Start {
    std::string host;
    int slot = 0;
    int label = 0;  // the rank its output lines carry (its first rank)
    ProcessSpec spec;
  };
  struct Step {
    // (host, slot): SIGTERM to the worker's group, SIGKILL after the grace.
    std::vector<std::pair<std::string, int>> stop;
    std::vector<Start> start;  // after the stops
    // End the job: with this line and status 1 (every worker stopped), or
    // (done) with status 0 once no worker runs.
    std::optional<std::string> failure;
    bool done = false;
  };
  virtual ~WorkerDriver() = default;
  virtual Step Tick() = 0;
  virtual void Exited(const std::string& host, int slot, int exit_code) = 0;
};

class Supervisor {
 public:
  explicit Supervisor(SupervisorOptions options)
      : options_(std::move(options)) {}

  // Spawns one process per entry of `specs` (index = rank; `hosts` names
  // each rank's host for messages) and supervises them to the end. Returns
  // the launcher's exit status.
  int Run(const std::vector<ProcessSpec>& specs,
          const std::vector<std::string>& hosts, Spawner& spawner);

  // An elastic job: the driver decides which workers run; a worker's
  // failure is its to handle, and the job ends when it says so (or on a
  // signal). Returns the launcher's exit status.
  int RunElastic(WorkerDriver& driver, Spawner& spawner);

 private:
  SupervisorOptions options_;
};

// Installs the launcher's handlers for SIGCHLD, SIGINT, SIGTERM and SIGHUP
// (self-pipe) and ignores SIGPIPE. Call once, before spawning anything.
void InstallLauncherSignalHandlers();

}  // namespace hvd::launcher
