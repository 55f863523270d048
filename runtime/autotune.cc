#include "runtime/autotune.h"

#include <cstdio>

#include "common/setting_keys.h"

namespace hvd::runtime {
namespace {

// The settings table's megabyte (HOROVOD_FUSION_THRESHOLD holds bytes).
double BytesPerMb() {
  return double(settings::Get(settings::key::kFusionThreshold).env_scale);
}

std::vector<std::pair<double, double>> Bounds(const TuneOptions& o,
                                              const Knobs& k) {
  return {o.fixed_fusion ? std::pair{k.fusion_mb(), k.fusion_mb()}
                         : std::pair{0.0, 64.0},
          o.fixed_cycle ? std::pair{k.cycle_ms(), k.cycle_ms()}
                        : std::pair{0.0, 100.0}};
}

}  // namespace

double Knobs::fusion_mb() const { return fusion_bytes / BytesPerMb(); }

double Knobs::cycle_ms() const { return cycle_time.count() / 1000.0; }

void Knobs::SetSearchPoint(double mb, double ms) {
  fusion_bytes = static_cast<size_t>(mb * BytesPerMb());
  cycle_time = std::chrono::microseconds(static_cast<int64_t>(ms * 1000));
}

Knobs Knobs::AtSearchPoint(double mb, double ms) {
  Knobs k;
  k.SetSearchPoint(mb, ms);
  return k;
}

Autotuner::Autotuner(TuneOptions options, Knobs start)
    : o_(options),
      current_(start),
      opt_(Bounds(options, start), options.noise) {
  log_.push_back(
      "sample,phase,fusion_threshold_mb,cycle_time_ms,response_cache,"
      "hierarchical_allreduce,hierarchical_allgather,shared_memory,"
      "single_copy,tcp_streams,tcp_wide_crossovers,bytes_per_second");
  if (o_.try_cache) choices_.push_back(&Knobs::cache);
  if (o_.try_hierarchical_allreduce) {
    choices_.push_back(&Knobs::hierarchical_allreduce);
  }
  if (o_.try_hierarchical_allgather) {
    choices_.push_back(&Knobs::hierarchical_allgather);
  }
  if (o_.try_shm) choices_.push_back(&Knobs::shm);
  if (o_.try_single_copy) choices_.push_back(&Knobs::single_copy);
  if (o_.try_streams) choices_.push_back(&Knobs::several_streams);
  if (o_.try_crossovers) choices_.push_back(&Knobs::wide_crossovers);
  if (o_.fixed_fusion && o_.fixed_cycle) done_ = true;
}

void Autotuner::Row(const char* phase, const Knobs& k, double score) {
  char buf[176];
  std::snprintf(buf, sizeof(buf), "%d,%s,%.3f,%.3f,%d,%d,%d,%d,%d,%d,%d,%.6g",
                samples_, phase, k.fusion_mb(), k.cycle_ms(), k.cache ? 1 : 0,
                k.hierarchical_allreduce ? 1 : 0,
                k.hierarchical_allgather ? 1 : 0, k.shm ? 1 : 0,
                k.single_copy ? 1 : 0, k.several_streams ? 1 : 0,
                k.wide_crossovers ? 1 : 0, score);
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
  steps_ = 0;
  bytes_ = 0;
  start_ = seconds;
  if (trying_) {
    // An on/off choice: keep it if it beat the best, then the next one.
    Row("choice", current_, score);
    ++samples_;
    if (score > best_score_) {
      best_ = current_;
      best_score_ = score;
    }
    choices_.erase(choices_.begin());
    return NextChoice();
  }
  Row(warmup ? "warmup" : "sample", current_, score);
  if (!warmup)
    opt_.AddSample({current_.fusion_mb(), current_.cycle_ms()}, score);
  ++samples_;
  if (static_cast<int>(opt_.samples()) >= o_.max_samples) {
    auto [best, value] = opt_.Best();
    best_ = current_;
    best_.SetSearchPoint(best[0], best[1]);
    best_score_ = value;
    trying_ = true;
    return NextChoice();
  }
  if (warmup) return std::nullopt;
  std::vector<double> next = opt_.Next();
  current_.SetSearchPoint(next[0], next[1]);
  return current_;
}

std::optional<Knobs> Autotuner::NextChoice() {
  if (choices_.empty()) {
    current_ = best_;
    Row("best", current_, best_score_);
    done_ = true;
    return current_;
  }
  current_ = best_;
  current_.*choices_.front() = !(best_.*choices_.front());
  return current_;
}

}  // namespace hvd::runtime
