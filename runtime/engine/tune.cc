// The engine's tunable side: autotune's samples and log, the values every
// rank applies together, and what they switch (pacing, the response cache,
// shared memory or TCP for host data).
#include <cstdio>

#include "common/logging.h"
#include "runtime/engine/engine.h"

namespace hvd::runtime {

void Engine::WriteAutotuneLog() {
  if (!tuner_ || options_.autotune_log.empty()) return;
  std::FILE* f = std::fopen(options_.autotune_log.c_str(), "w");
  if (!f) {
    HVD_LOG(Error) << "autotune log " << options_.autotune_log
                   << " cannot be written";
    return;
  }
  for (const std::string& row : tuner_->log())
    std::fprintf(f, "%s\n", row.c_str());
  std::fclose(f);
}

Status Engine::ApplyKnobs(const Knobs& k) {
  fusion_threshold_ = k.fusion_bytes;
  driver_.set_cycle_time(k.cycle_time);
  if (options_.cache_capacity > 0 && k.cache != cache_enabled_) {
    SetCacheEnabled(k.cache);
  }
  HVD_RETURN_IF_ERROR(backends_->UsePrimaryHost(k.shm));
  backends_->SetHierarchical(k.hierarchical_allreduce,
                             k.hierarchical_allgather);
  backends_->SetSingleCopy(k.single_copy);
  backends_->SetSeveralStreams(k.several_streams);
  backends_->SetWideCrossovers(k.wide_crossovers);
  return Status::Ok();
}

void Engine::TuneAfterCycle() {
  if (tuner_->done() || cycle_bytes_ == 0) return;
  double secs = std::chrono::duration<double>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count();
  outgoing_knobs_ = tuner_->Step(cycle_bytes_, secs);
  if (tuner_->done()) {
    HVD_LOG(Info) << "autotune done: fusion threshold "
                  << tuner_->current().fusion_mb() << " MB, cycle time "
                  << tuner_->current().cycle_ms() << " ms";
    WriteAutotuneLog();
  }
}

void Engine::SetCacheEnabled(bool on) {
  if (!on) {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint32_t id : my_cached_.ids()) {
      if (Pending* p = FindPendingLocked(cache_.Get(id).name)) {
        fresh_.push_back(p);
      }
    }
  }
  my_cached_.clear();
  negotiator_.ForgetAllCached();
  cache_.Clear();
  cache_enabled_ = on;
}

}  // namespace hvd::runtime
