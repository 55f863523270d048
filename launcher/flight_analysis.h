// The root-cause report: what the ranks' flight recorder dumps
// (runtime/engine/flight_recorder.h) say about a hung or stuck job, in a
// few lines. Pure but for AnalyzeFlightDir's reading of files.
//
// A tensor some ranks wait on (submitted, not finished) that others have
// not submitted again names those others, what they last did and how long
// ago; ranks that wait on tensors the others have not submitted, each on
// its own, submit in different orders; ranks that wait on one name with
// different sizes or ops disagree on it; with nothing in flight, the rank
// whose last collective is oldest is named. Dumps are taken moments apart:
// a rank that finished the round others wait on, one dumped before they
// submitted it, and a wait under a second are a job that moves, not a
// rank that stayed away.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvd::launcher {

struct FlightOp {
  uint64_t seq = 0;
  std::string name, op;
  int64_t bytes = 0;
  std::optional<int64_t> submitted_us, finished_us;  // wall clock
  bool failed = false;
};

struct FlightRank {
  int rank = 0;
  std::string host;
  int64_t dumped_us = 0;
  std::vector<FlightOp> ops;  // oldest first
};

// One rank's dump; InvalidArgument naming what is missing or malformed.
StatusOr<FlightRank> ParseFlightDump(const std::string& json);

// The report's lines (at least one).
std::vector<std::string> AnalyzeFlight(const std::vector<FlightRank>& ranks);

// Reads DIR/rank.*.json and analyzes them; errors name the file.
StatusOr<std::vector<std::string>> AnalyzeFlightDir(const std::string& dir);

}  // namespace hvd::launcher
