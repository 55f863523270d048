#include "runtime/autotune.h"

#include <cstdio>

namespace hvd::runtime {
namespace {

std::vector<std::pair<double, double>> Bounds(const TuneOptions& o,
                                              const Knobs& k) {
  return {o.fixed_fusion ? std::pair{k.fusion_mb, k.fusion_mb}
                         : std::pair{0.0, 64.0},
          o.fixed_cycle ? std::pair{k.cycle_ms, k.cycle_ms}
                        : std::pair{1.0, 100.0}};
}

}  // namespace

Autotuner::Autotuner(TuneOptions options, Knobs start)
    : o_(options),
      current_(start),
      opt_(Bounds(options, start), options.noise) {
  log_.push_back(
      "sample,phase,fusion_threshold_mb,cycle_time_ms,bytes_per_second");
  if (o_.fixed_fusion && o_.fixed_cycle) done_ = true;
}

void Autotuner::Row(const char* phase, const Knobs& k, double score) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%d,%s,%.3f,%.3f,%.6g", samples_, phase,
                k.fusion_mb, k.cycle_ms, score);
  log_.push_back(buf);
}

std::optional<Knobs> Autotuner::Step(uint64_t bytes, double seconds) {
  if (done_) return std::nullopt;
  if (start_ < 0) {
    start_ = seconds;  // the first cycle opens the sample
    return std::nullopt;
  }
  bytes_ += bytes;
  if (++steps_ < o_.steps_per_sample) return std::nullopt;
  const double elapsed = seconds - start_;
  const double score = elapsed > 0 ? bytes_ / elapsed : 0;
  const bool warmup = samples_ < o_.warmup_samples;
  Row(warmup ? "warmup" : "sample", current_, score);
  if (!warmup) opt_.AddSample({current_.fusion_mb, current_.cycle_ms}, score);
  ++samples_;
  steps_ = 0;
  bytes_ = 0;
  start_ = seconds;
  if (static_cast<int>(opt_.samples()) >= o_.max_samples) {
    auto [best, value] = opt_.Best();
    current_ = {best[0], best[1]};
    Row("best", current_, value);
    done_ = true;
    return current_;
  }
  if (warmup) return std::nullopt;
  std::vector<double> next = opt_.Next();
  current_ = {next[0], next[1]};
  return current_;
}

}  // namespace hvd::runtime
