// The stall inspector (rank 0): on the engine's turns, at most once per
// warning period (or shutdown time, if shorter), it asks what has stalled
// (tensors some ranks submitted and others not, with the missing ranks:
// the negotiator knows) and warns; it asks for the ranks' flight recorders
// on a stall's first warning and before its shutdown; it says when a stall
// has lasted past the shutdown time, so that the engine ends the job. Owned by
// the engine; clock and report handed in, so it is tested alone.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "runtime/engine/engine_options.h"

namespace hvd::runtime {

class StallInspector {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // What has stalled at `now` ("" for nothing), and whether any of it has
  // stalled past the shutdown time.
  using Report = std::function<std::string(TimePoint now, bool* past_shutdown)>;

  StallInspector(StallOptions options, TimePoint start)
      : options_(std::move(options)), last_check_(start) {}

  const StallOptions& options() const { return options_; }

  // Checks when a check is due at `now` and warns about what stalled.
  // True when a stall has lasted past the shutdown time.
  bool Inspect(TimePoint now, const Report& report);

  // The error the job ends with when Inspect said so.
  std::string ShutdownMessage(const std::string& report) const;

 private:
  const StallOptions options_;
  TimePoint last_check_;
  // The last check found a stall: the next warning is no new episode (the
  // flight recorders were asked for on its first).
  bool stalled_ = false;
};

}  // namespace hvd::runtime
