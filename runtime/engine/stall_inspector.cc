#include "runtime/engine/stall_inspector.h"

#include <algorithm>

#include "common/logging.h"
#include "runtime/metrics.h"

namespace hvd::runtime {

bool StallInspector::Inspect(TimePoint now, const Report& report) {
  if (!options_.check) return false;
  // Checked once per warning period (or shutdown time, if shorter).
  const auto period = std::min(options_.warning, options_.shutdown.count() > 0
                                                     ? options_.shutdown
                                                     : options_.warning);
  if (now - last_check_ < period) return false;
  last_check_ = now;
  bool past_shutdown = false;
  const std::string stalled = report(now, &past_shutdown);
  const bool first = !stalled_;
  stalled_ = !stalled.empty();
  if (stalled.empty()) return false;
  const std::string warning =
      "stalled tensors: some ranks submitted them and others did not for " +
      std::to_string(options_.warning.count() / 1000) + " s: " + stalled +
      ". Every rank must submit the same tensors (in any order).";
  Metrics::Process().StallWarning();
  if (options_.on_warning) {
    options_.on_warning(warning);
  } else {
    HVD_LOG(Warning) << warning;
  }
  if (options_.ask_dump && (first || past_shutdown)) {
    options_.ask_dump(stalled, past_shutdown);
  }
  return past_shutdown;
}

std::string StallInspector::ShutdownMessage(const std::string& report) const {
  return "the job was stopped by the stall inspector after " +
         std::to_string(options_.shutdown.count() / 1000) + " s: " + report +
         " (HOROVOD_STALL_SHUTDOWN_TIME_SECONDS)";
}

}  // namespace hvd::runtime
