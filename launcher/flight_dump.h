// Dumps of every worker's flight recorder (runtime/engine/flight_recorder.h)
// on demand: SIGUSR1 to horovodrun. The request and the answers travel
// through the job's rendezvous (rendezvous/flight_keys.h), so remote hosts
// answer as local ones do, and a worker stuck in a collective still
// answers (from a rendezvous callback, not from its own threads).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "launcher/job_rendezvous.h"

namespace hvd::launcher {

// Where dump N of a job goes: DIR/N/rank.R.json, DIR being
// $TMPDIR/hvd-flight-JOB (else /tmp/...).
std::string FlightDumpDir(const std::string& job_id);

// Asks every running member of `job` for its recorder, waits up to
// `timeout` for the answers, and writes those that came. Returns the lines
// to say: how many ranks answered, where the files are, who did not; then
// the report on them (launcher/flight_analysis.h).
std::vector<std::string> DumpFlightRecorders(JobRendezvous& job,
                                             std::chrono::milliseconds timeout);

}  // namespace hvd::launcher
