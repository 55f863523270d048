// --autotune: rank 0 scores the bytes the engine reduces per second over
// `steps_per_sample` working cycles, throws away the first
// `warmup_samples`, and searches the fusion threshold (0-64 MB) and the
// cycle time (0-100 ms, 0 being cycles on demand) by Bayesian optimisation
// (bayes_opt.h) for `max_samples` samples; then it keeps the best. Values the
// user gave explicitly stay fixed. Pure logic: the engine feeds it bytes and
// times and ships the chosen values to every rank in its next negotiation
// message, so all ranks switch in the same cycle.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/setting_keys.h"
#include "runtime/bayes_opt.h"

namespace hvd::runtime {

struct TuneOptions {
  // The settings table's defaults (HOROVOD_AUTOTUNE_*).
  int warmup_samples =
      int(settings::Default(settings::key::kAutotuneWarmupSamples));
  int steps_per_sample =
      int(settings::Default(settings::key::kAutotuneStepsPerSample));
  int max_samples = int(settings::Default(settings::key::kAutotuneMaxSamples));
  double noise = settings::Default(settings::key::kAutotuneNoise);
  bool fixed_fusion = false, fixed_cycle = false;
  // The on/off choices tried after the search, one sample each (kept when
  // the score improves): the response cache, the hierarchical collectives
  // where the job has them, shared memory where the job uses it, and the
  // ones below.
  bool try_cache = true;
  bool try_hierarchical_allreduce = false, try_hierarchical_allgather = false;
  // Data through shared memory or Gloo over TCP (single-host jobs).
  bool try_shm = false;
  // Large allreduces through one copy (the peers' buffers) or two (the
  // segment), where shared memory can read the peers.
  bool try_single_copy = false;
  // Large TCP allreduce steps over several connections per peer or one,
  // where the data crosses hosts over TCP with several.
  bool try_streams = false;
  // The TCP collectives' fewer-trip algorithms up to 4 times their
  // crossovers, or as set, where the data crosses hosts on hvd's ring.
  bool try_crossovers = false;
};

struct Knobs {
  size_t fusion_bytes = size_t(128) << 20;
  std::chrono::microseconds cycle_time{0};  // 0: cycles on demand
  bool cache = true;
  bool hierarchical_allreduce = true, hierarchical_allgather = true;
  bool shm = true;          // host data through shared memory (else Gloo, TCP)
  bool single_copy = true;  // shared memory reads the peers' buffers
  bool several_streams = true;   // TCP steps over HOROVOD_TCP_STREAMS
  bool wide_crossovers = false;  // TCP crossovers 4 times as set
  bool operator==(const Knobs&) const = default;

  // The search's units (MB, ms), as its bounds and log speak them: the
  // one place they meet bytes and microseconds.
  double fusion_mb() const;
  double cycle_ms() const;
  void SetSearchPoint(double fusion_mb, double cycle_ms);
  static Knobs AtSearchPoint(double fusion_mb, double cycle_ms);
};

class Autotuner {
 public:
  Autotuner(TuneOptions options, Knobs start);
  // One cycle that reduced `bytes`, ending at `seconds` (any clock). The
  // knobs to switch to when a sample ends, else nothing.
  std::optional<Knobs> Step(uint64_t bytes, double seconds);
  bool done() const { return done_; }
  // CSV: a header, a row per sample, and the chosen values last.
  const std::vector<std::string>& log() const { return log_; }
  const Knobs& current() const { return current_; }

 private:
  void Row(const char* phase, const Knobs& k, double score);
  std::optional<Knobs> NextChoice();

  TuneOptions o_;
  Knobs current_;
  BayesianOptimizer opt_;
  // After the search: the on/off choices still to try, and the best so far.
  std::vector<bool Knobs::*> choices_;
  Knobs best_;
  double best_score_ = -1;
  bool trying_ = false;
  int samples_ = 0;  // finished, warm-up included
  int steps_ = 0;
  uint64_t bytes_ = 0;
  double start_ = -1;
  bool done_ = false;
  std::vector<std::string> log_;
};

}  // namespace hvd::runtime
