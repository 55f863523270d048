// Launching through Slurm: one `srun` step runs every worker, each task
// under `hvd-remote-exec --srun`, which maps the step's environment to the
// worker's place in the job. Pure: environments are handed in.
//
// The mapping is checked, not trusted: task i is rank i of the launcher's
// plan (worker_env::kTaskHosts lists its hosts and slots in rank order),
// and the
// node srun ran it on (SLURMD_NODENAME) must be the plan's host for it.
// The worker still takes its rank from the rendezvous, as every worker.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/hosts.h"
#include "rendezvous/assignment.h"

namespace hvd::launcher {

using SrunPlacement = rendezvous::TaskPlace;

// Where task SLURM_PROCID belongs. Errors name the variable or the
// mismatch.
StatusOr<SrunPlacement> PlaceSrunTask(
    const std::map<std::string, std::string>& env);

// The variables the task's worker gets on top of the step's: its host,
// slot and Horovod's rank variables.
std::vector<std::string> SrunWorkerEnv(const SrunPlacement& placement);

// The srun command line for a step of `hosts` (the plan's, in rank order)
// that runs `wrapper --srun -- command`: labelled output, the whole step
// killed when a task fails, tasks placed as the plan says (arbitrary
// distribution over the SLURM_HOSTFILE the launcher writes).
std::vector<std::string> SrunArgv(const std::string& srun,
                                  const std::vector<HostSpec>& hosts,
                                  const std::string& wrapper,
                                  const std::vector<std::string>& command);

// SLURM_HOSTFILE's text: each task's node, one per line, in rank order.
std::string SrunHostfile(const std::vector<HostSpec>& hosts);

// A line of srun's own stderr about a task ("srun: error: node2: task 3:
// Killed", "tasks 2-3: Terminated"): the node and what happened, or false.
bool ParseSrunTaskError(const std::string& line, std::string* node,
                        std::string* what);

// A line of a labelled step ("3: text"): the task and where its text
// starts, or false.
bool SplitSrunLabel(std::string_view line, int* task, size_t* text_at);

// What the task wrapper prints (on stderr) when its worker fails, so the
// launcher learns which task failed first and with what status; the
// launcher takes it out of the output.
std::string SrunExitMarker(int code);
bool ParseSrunExitMarker(std::string_view text, int* code);

}  // namespace hvd::launcher
