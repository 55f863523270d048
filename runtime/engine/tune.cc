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
  cycle_time_ = k.cycle_time;
  if (options_.cache_capacity > 0 && k.cache != cache_enabled_) {
    SetCacheEnabled(k.cache);
  }
  HVD_RETURN_IF_ERROR(backends_->UsePrimaryHost(k.shm));
  backends_->SetHierarchical(k.hierarchical_allreduce,
                             k.hierarchical_allgather);
  backends_->SetSingleCopy(k.single_copy);
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
    for (uint32_t id : my_cached_) {
      auto it = pending_.find(cache_.Get(id).name);
      if (it != pending_.end()) fresh_.push_back(it->second.request);
    }
  }
  my_cached_.clear();
  negotiator_.ForgetAllCached();
  cache_.Clear();
  cache_enabled_ = on;
}

void Engine::Pace() {
  const auto due = last_cycle_start_ + cycle_time_;
  for (auto now = std::chrono::steady_clock::now(); now < due;
       now = std::chrono::steady_clock::now()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) break;
    }
    // In slices, so a shutdown is not held up by a long cycle time.
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(
        due - now, std::chrono::milliseconds(10)));
  }
  last_cycle_start_ = std::chrono::steady_clock::now();
}

void Engine::LetBurstFinish() {
  using std::chrono::microseconds;
  // Submitting a request takes a microsecond or two; a burst's requests
  // come closer than the gap. The bound keeps a steady trickle from
  // holding the cycle back.
  constexpr microseconds kGap(10), kMost(200);
  const auto start = std::chrono::steady_clock::now();
  size_t seen = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seen = fresh_.size();
  }
  for (;;) {
    if (waiting_.load(std::memory_order_relaxed) > 0) return;
    // Sleeping, not spinning: the submitter may need this CPU.
    std::this_thread::sleep_for(kGap);
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || fresh_.size() == seen ||
        std::chrono::steady_clock::now() - start >= kMost) {
      return;
    }
    seen = fresh_.size();
  }
}

}  // namespace hvd::runtime
