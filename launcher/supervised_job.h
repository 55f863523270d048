// The supervisor's job, for its two files: supervisor.cc (starting,
// reaping, the exit policy, signals, elastic turns) and
// supervisor_output.cc (reading, prefixing and copying the workers'
// output). Not part of the supervisor's interface (supervisor.h).
#pragma once

#include <poll.h>

#include <chrono>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "launcher/output.h"
#include "launcher/say.h"
#include "launcher/step_output.h"
#include "launcher/supervisor.h"

namespace hvd::launcher::supervision {

using Clock = std::chrono::steady_clock;

// Writes all of `data` to `fd`, as far as the reader takes it.
void WriteAll(int fd, const std::string& data);
using launcher::Say;  // launcher/say.h

struct Worker {
  int rank = 0;  // the rank its output carries (in an elastic job, its first)
  std::string host;
  int slot = 0;
  SpawnedProcess proc;
  int out_file = -1, err_file = -1;  // --output-filename copies
  LineSplitter out_lines, err_lines;
  bool running = false;
  int wait_status = 0;
  // Asked to stop on its own (an elastic job left its host): SIGKILL at
  // kill_at, and its exit is nobody's failure.
  bool stop_requested = false;
  Clock::time_point kill_at;
  // One process runs every task (SupervisorOptions::step): its tasks'
  // output files, by rank.
  std::vector<int> task_out_files, task_err_files;
};

class Job {
 public:
  Job(const SupervisorOptions& options, Spawner& spawner, WorkerDriver* driver)
      : options_(options), spawner_(spawner), driver_(driver) {}

  int Run(const std::vector<ProcessSpec>& specs,
          const std::vector<std::string>& hosts);

 private:
  Status OpenOutputFiles(Worker& w, int size, bool append);
  Status OpenStepOrWorkerFiles(Worker& w, int size);
  // A line piece of a step's output, under its task's rank.
  template <typename WriteOut>
  void EmitStepPiece(Worker& w, Stream stream, const Piece& piece,
                     const WriteOut& write_out);
  // Appends the open output pipes of every worker, with who owns each.
  void CollectOutputFds(std::vector<pollfd>& fds,
                        std::vector<std::pair<Worker*, Stream>>& owners);
  bool StartWatchdog();
  // Starts one worker; false (said why) when it could not be started.
  bool StartWorker(Worker& w, const ProcessSpec& spec);
  void Reap();
  void HandleSignals();
  void ReadOutput(Worker& w, int fd, Stream stream);
  void BeginStop(std::string why);
  void KillAll(int sig, bool only_running);
  void CheckStartTimeout();
  // Says once per rank when a worker that exited 0 is waited for by a
  // rank in a later generation (SupervisorOptions::members): about once a
  // second while watching, or `now` (a worker just failed).
  void CheckLeftBehind(bool now);
  bool WatchingLeftBehind() const;
  // Answers a worker's ask for the flight recorders, about once a second.
  void CheckFlightAsk();
  bool WatchingFlightAsk() const;
  bool WatchingStart() const;
  // An elastic job: asks the driver what to change and does it. False once
  // the job is over (done, nothing running).
  bool DriveElastic();
  bool AnyRunning() const;
  int PollTimeoutMs() const;
  void Drain();
  // Reads one worker's output to its end (at most 2 s).
  void DrainWorker(Worker& w);

  const SupervisorOptions& options_;
  Spawner& spawner_;
  WorkerDriver* driver_;  // null: a fixed job
  std::vector<std::unique_ptr<Worker>> workers_;
  SpawnedProcess watchdog_;
  bool stopping_ = false;
  bool killed_ = false;
  bool done_ = false;  // elastic: the driver said the job is over
  Clock::time_point kill_at_;
  Clock::time_point start_deadline_;
  bool start_checked_ = false;
  std::optional<int> first_failure_;  // index into workers_
  // Ranks that exited 0 and have not been found left behind yet; the next
  // look at the members is due at next_members_check_.
  std::set<int> exited_ok_;
  Clock::time_point next_members_check_;
  Clock::time_point next_flight_check_;
  // The stall inspector ends the job: the flight report's finding.
  std::string stall_finding_;
  int exit_code_ = 0;
  // A step: the first task that failed (its marker or the program's
  // report).
  std::optional<int> failed_task_;
  std::optional<StepOutput> step_;  // when the one process runs every task
};

}  // namespace hvd::launcher::supervision
