// The stall inspector (rank 0): tensors some ranks submitted and others
// not, named with the missing ranks.
#include "common/logging.h"
#include "runtime/engine.h"

namespace hvd::runtime {

std::string Engine::StallReport(std::chrono::steady_clock::time_point now,
                                bool* past_shutdown) const {
  std::string report;
  int listed = 0;
  for (const auto& [name, seen] : seen_) {
    auto age = now - seen.since;
    if (age < options_.stall_warning) continue;
    if (options_.stall_shutdown.count() > 0 && age >= options_.stall_shutdown) {
      *past_shutdown = true;
    }
    if (listed++ >= 10) continue;
    std::vector<bool> has(options_.size, false);
    for (int r : seen.ranks) has[r] = true;
    std::string missing;
    for (int r = 0; r < options_.size; ++r) {
      if (!has[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    report += (report.empty() ? "" : "; ") + std::string("'") + name +
              "' (missing ranks: " + missing + ")";
  }
  for (const auto& [id, since] : cached_since_) {
    auto age = now - since;
    if (age < options_.stall_warning || !cache_.Has(id)) continue;
    if (options_.stall_shutdown.count() > 0 && age >= options_.stall_shutdown) {
      *past_shutdown = true;
    }
    if (listed++ >= 10) continue;
    std::string missing;
    auto found = cached_ranks_.find(id);
    static const std::vector<bool> kNone;
    const auto& ranks = found == cached_ranks_.end() ? kNone : found->second;
    for (int r = 0; r < options_.size; ++r) {
      if (r < static_cast<int>(ranks.size()) && !ranks[r]) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
    }
    report += (report.empty() ? "" : "; ") + std::string("'") +
              cache_.Get(id).name + "' (missing ranks: " + missing + ")";
  }
  if (listed > 10) report += "; and " + std::to_string(listed - 10) + " more";
  return report;
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
  if (options_.on_stall_warning) {
    options_.on_stall_warning(warning);
  } else {
    HVD_LOG(Warning) << warning;
  }
  return past_shutdown;
}

}  // namespace hvd::runtime
