// LaunchPlan: which rank runs where, with what environment. Pure: built
// from the parsed options and facts handed in (which hosts are local, how
// many GPUs), and complete before anything is spawned.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/setting_keys.h"
#include "common/status.h"
#include "launcher/cli.h"
#include "rendezvous/assignment.h"

namespace hvd::launcher {

struct WorkerPlan {
  std::string host;  // as written in -H
  int slot = 0;
  rendezvous::Assignment assignment;
  bool local = true;  // false: started over SSH
  std::string user;   // SSH user ("user@host"), empty: ours
  // Filled in once the hosts are reached (empty: the job-wide defaults):
  std::string rendezvous_addr;  // how this worker reaches the rendezvous
  std::string gloo_addr;        // the address its Gloo binds
};

struct LaunchPlan {
  // The hosts that get at least one rank, with the slots they use; this is
  // the job the rendezvous is told about.
  std::vector<rendezvous::HostSlots> hosts;
  std::vector<WorkerPlan> workers;  // by rank
  std::vector<std::string> command;
  int join_timeout_s = 0;  // 0: none
  int start_timeout_s =
      static_cast<int>(settings::Default(settings::key::kStartTimeout).count());
  bool verbose = false;
  // HOROVOD_* of the tuning flags the user gave (LaunchOptions::worker_env).
  std::map<std::string, std::string> tuning_env;
  bool all_local = true;
};

struct HostFacts {
  std::function<bool(const std::string& host)> is_local;
  int local_gpus = 0;
};

// The job-wide part of a plan (command, timeouts, tuning variables): an
// elastic job's workers are planned one at a time from it.
LaunchPlan PlanWithoutWorkers(const LaunchOptions& options);

// Fills hosts in order up to -np. InvalidArgument when the hosts have too
// few slots (saying how many there are). A host is local when it names this
// machine and has no "user@"; every other host is reached over SSH.
StatusOr<LaunchPlan> MakePlan(const LaunchOptions& options,
                              const HostFacts& facts);

struct JobAccess {
  std::string rendezvous_addr;
  std::string job_id;
  std::string job_token;
  // TLS to the rendezvous, as PEM text (empty: plaintext).
  std::string tls_ca_pem;
  std::string tls_cert_pem;
  std::string tls_key_pem;
};

// The environment of one worker as "K=V" strings: the launcher's own
// environment minus shell functions, OLDPWD and CUDA_VISIBLE_DEVICES, plus
// the rendezvous access and Horovod's HOROVOD_* variables.
std::vector<std::string> WorkerEnvironment(
    const std::map<std::string, std::string>& launcher_env,
    const LaunchPlan& plan, const WorkerPlan& worker, const JobAccess& access);

// The environment of one srun or mpirun step that starts every worker:
// `job_env` (WorkerEnvironment of any worker) less what differs between
// tasks (worker_env's per-task variables, which each task's wrapper or
// libhvd finds from its task index), plus the rendezvous as the hosts
// reach it (`rendezvous_addr`), loopback for Gloo on one machine, and the
// plan's hosts in rank order.
std::vector<std::string> StepEnvironment(
    const std::vector<std::string>& job_env, const std::string& rendezvous_addr,
    bool all_local, const std::string& task_hosts);

// `search_path` (PYTHONPATH's form, ':'-separated) with `dir` added at
// the end, unless it is there already: entries the user set come first.
std::string AppendToPath(const std::string& search_path,
                         const std::string& dir);

}  // namespace hvd::launcher
