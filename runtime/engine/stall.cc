// The stall inspector (rank 0): tensors some ranks submitted and others
// not, named with the missing ranks.
#include "common/logging.h"
#include "runtime/engine/engine.h"
#include "runtime/metrics.h"

namespace hvd::runtime {

std::string Engine::StallReport(std::chrono::steady_clock::time_point now,
                                bool* past_shutdown) const {
  return negotiator_.StallReport(now, options_.stall_warning,
                                 options_.stall_shutdown, cache_,
                                 past_shutdown);
}

bool Engine::InspectStalls() {
  if (!options_.stall_check) return false;
  auto now = std::chrono::steady_clock::now();
  // Checked once per warning period (or shutdown time, if shorter).
  auto period =
      std::min(options_.stall_warning, options_.stall_shutdown.count() > 0
                                           ? options_.stall_shutdown
                                           : options_.stall_warning);
  if (now - last_stall_check_ < period) return false;
  last_stall_check_ = now;
  bool past_shutdown = false;
  std::string report = StallReport(now, &past_shutdown);
  if (report.empty()) return false;
  std::string warning =
      "stalled tensors: some ranks submitted them and others did not for " +
      std::to_string(options_.stall_warning.count() / 1000) + " s: " + report +
      ". Every rank must submit the same tensors (in any order).";
  Metrics::Process().StallWarning();
  if (options_.on_stall_warning) {
    options_.on_stall_warning(warning);
  } else {
    HVD_LOG(Warning) << warning;
  }
  return past_shutdown;
}

}  // namespace hvd::runtime
