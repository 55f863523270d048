// The names of a job's shared-memory segments, and their removal when the
// job has ended.
//
// Every segment a worker creates is /dev/shm/hvd-<job>-<purpose>-<random>,
// <job> being the first 16 characters of the job id. A segment's name is
// removed as soon as every local rank has mapped it; until then a rank
// that dies (killed before its peers mapped, or a launcher killed at start)
// would leave it behind. So whoever outlives a host's workers — the
// launcher's watchdog on its own host, hvd-remote-exec on the others —
// sweeps the job's names once its workers are gone.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace hvd {

// "hvd-<first 16 characters of job_id>-": what every segment name of the
// job starts with (without shm_open's leading '/').
std::string ShmJobPrefix(const std::string& job_id);

struct ShmSweep {
  std::vector<std::string> removed;  // names unlinked
  std::vector<std::string> in_use;   // left: a live process maps or holds it
};

// Unlinks every /dev/shm entry of `job_id` that no live process has open or
// mapped, processes of the groups in `dying_groups` (just SIGKILLed) not
// counting; first waits (up to `dying_wait`) for those to be gone, so that
// none makes a name after the list is taken. A SIGKILLed process is gone
// within milliseconds on an idle machine; on one whose cores are all busy
// it may not run again for seconds (a chaos run under load left a segment
// made after a 2 s wait), hence the long default. Processes whose /proc entries
// this user cannot read are taken to use nothing of the job (its segments
// are mode 0600). Reads nothing of
// /proc when the job has no entries, the common case.
ShmSweep SweepJobSegments(
    const std::string& job_id, const std::vector<pid_t>& dying_groups = {},
    std::chrono::milliseconds dying_wait = std::chrono::seconds(30));

}  // namespace hvd
