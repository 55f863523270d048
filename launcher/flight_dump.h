// Dumps of every worker's flight recorder (runtime/engine/flight_recorder.h)
// on demand (SIGUSR1 to horovodrun) and when rank 0's stall inspector asks. The
// request and the answers travel through the job's rendezvous
// (rendezvous/flight_keys.h), so remote hosts answer as local ones do, and a
// worker stuck in a collective still answers (from a rendezvous callback, not
// from its own threads).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "launcher/job_rendezvous.h"

namespace hvd::launcher {

// Where dump N of a job goes: DIR/N/rank.R.json, DIR being
// $TMPDIR/hvd-flight-JOB (else /tmp/...).
std::string FlightDumpDir(const std::string& job_id);

// Asks every running member of `job` for its recorder, waits up to
// `timeout` for the answers, and writes those that came. Returns the lines
// to say: how many ranks answered (`why` after the dump's number, e.g.
// "asked by SIGUSR1"), where the files are, who did not; then the report
// on them (launcher/flight_analysis.h). Nothing (no lines, no files) when
// no member runs, or, with `only_in_flight`, when no answer has a
// collective in flight (a failure outside collectives has nothing to show).
std::vector<std::string> DumpFlightRecorders(JobRendezvous& job,
                                             std::chrono::milliseconds timeout,
                                             const std::string& why,
                                             bool only_in_flight);

// The newest dump's lines (its number, counted from 1 in this process; 0
// before any), for the live page: DumpFlightRecorders keeps them.
struct FlightReport {
  uint64_t number = 0;
  std::vector<std::string> lines;
};
void KeepFlightReport(std::vector<std::string> lines);
FlightReport LastFlightReport();

// The same gathered for horovodrun's /debug/collectives (--metrics-port):
// {"job", "dump": N, "ranks": [each rank's dump, or {rank, host,
// no_record}], "report": [lines]}; no files are written.
std::string FlightRecordersJson(JobRendezvous& job,
                                std::chrono::milliseconds timeout);

// A worker's ask for a dump (rendezvous::kFlightAskKey): rank 0's stall
// inspector, on a stall and before a stall shutdown.
struct FlightAsk {
  std::string token;
  bool shutdown = false;  // the job ends once the report is out
  std::string stalled;    // what the inspector found stalled
};
// "TOKEN stall|shutdown TEXT"; nullopt when malformed.
std::optional<FlightAsk> ParseFlightAsk(const std::string& value);

// Answers a new ask, if there is one since `*last_token`: dumps, answers
// the worker (rendezvous::FlightAskedKey) and returns the lines to say.
// A shutdown ask sets `*ends_job` to the report's finding (its first
// line), for the job's last line.
std::vector<std::string> AnswerFlightAsk(JobRendezvous& job,
                                         std::string* last_token,
                                         std::string* ends_job);

}  // namespace hvd::launcher
