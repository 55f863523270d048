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
// rank that stayed away. A collective that failed counts as waited on
// until it failed. A rank without a record is named next to what the
// others wait on. Sites and stacks, where the dumps have them, say where in
// the program each named rank is.
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
  std::string site;  // where it was submitted ("train.py:88 in step"), or ""
};

struct FlightRank {
  int rank = 0;
  std::string host;
  int64_t dumped_us = 0;
  std::vector<FlightOp> ops;  // oldest first
  // Set for a rank the launcher has no record of, saying why ("it exited
  // with status 3"); then `ops` is empty.
  std::optional<std::string> no_record;
  // Every thread's stack at the dump, as Python's faulthandler writes them
  // ("" when the worker gave none).
  std::string stacks;
};

// "train.py:88 in load_batch": the innermost frame of the main thread (the
// last one listed) in faulthandler's text; "" when there is none.
std::string InnermostFrame(const std::string& stacks);

// One rank's dump; InvalidArgument naming what is missing or malformed.
StatusOr<FlightRank> ParseFlightDump(const std::string& json);

// The report's lines (at least one).
std::vector<std::string> AnalyzeFlight(const std::vector<FlightRank>& ranks);

// Reads DIR/rank.*.json and analyzes them; errors name the file.
StatusOr<std::vector<std::string>> AnalyzeFlightDir(const std::string& dir);

}  // namespace hvd::launcher
