// What this process's engine measures, always on: collectives (calls,
// tensors, bytes and time, by operation), negotiation time, the response
// cache, fusion, stalls, the time between training steps, the process's
// CPU and memory, and its GPU's memory and utilisation where it uses one.
// Cheap: a few additions under a mutex per collective group, none per
// element; the steady state's express allreduces take no lock at all
// (CycleTally).
// Report() renders them as Prometheus samples (common/metrics_format.h) for the
// launcher to serve.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/metrics_format.h"
#include "common/single_writer.h"

namespace hvd::runtime {

class Metrics {
  struct Histogram {
    std::vector<uint64_t> counts =
        std::vector<uint64_t>(metrics::LatencyBuckets().size() + 1, 0);
    double sum = 0;
    void Add(double seconds);
  };
  struct Op {
    uint64_t calls = 0, tensors = 0, bytes = 0;
    Histogram seconds;
  };
  using OpMap = std::map<std::pair<std::string, std::string>, Op>;

 public:
  using Clock = std::chrono::steady_clock;

  // The rank's GPU, read when a report is made. Negative: not known.
  struct GpuUsage {
    int device = 0;
    double memory_used_bytes = -1, memory_total_bytes = -1;
    double utilization = -1;  // share of time a kernel ran (0..1)
  };
  using GpuReader = std::function<std::optional<GpuUsage>()>;

  // The process's one set (every context of the process adds to it).
  static Metrics& Process();

  // Off: every measurement is skipped (HOROVOD_METRICS_DISABLE, to compare
  // the cost).
  void set_enabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // `transport`: the data path that ran it ("shm", "gloo", "nccl",
  // "negotiation" for small allreduces carried in the negotiation).
  void Collective(const std::string& op, const std::string& transport,
                  int tensors, uint64_t bytes, double seconds);
  void Negotiation(double seconds);
  // What one engine's cycles count on every tensor or express allreduce
  // (response cache lookups, the steady state's small allreduces), kept
  // apart from the rest so that it costs no lock: a small allreduce is a
  // fraction of a microsecond there, and a mutex was a tenth of it. One
  // thread at a time writes a tally (whoever runs that engine's cycles,
  // under its cycle lock), with loads and stores of atomics; Report adds
  // every tally in.
  class CycleTally {
   public:
    // Counts while `enabled` (the metrics' switch) is on.
    explicit CycleTally(const std::atomic<bool>& enabled) : enabled_(enabled) {}
    // One express allreduce: the exchange's time (`negotiation`), one
    // allreduce of `bytes` carried in the negotiation that took `seconds`,
    // and the allreduce-busy time when it was the last one outstanding
    // (`busy` < 0: it was not).
    void Express(double negotiation, uint64_t bytes, double seconds,
                 double busy);
    // A request looked up in the response cache.
    void CacheLookup(bool hit);

   private:
    friend class Metrics;
    // Adds this tally to Report's copies of the totals.
    void AddTo(OpMap& ops, Histogram& negotiation, double& busy, uint64_t& hits,
               uint64_t& misses) const;
    struct Counts {
      std::atomic<uint64_t> counts[metrics::kLatencyBucketCount + 1] = {};
      std::atomic<double> sum{0};
      void Add(double seconds);
    };
    const std::atomic<bool>& enabled_;
    std::atomic<uint64_t> calls_{0}, bytes_{0}, cache_hits_{0},
        cache_misses_{0};
    std::atomic<double> busy_{0};
    Counts negotiation_, seconds_;
  };
  // A new tally, for one engine; kept for the process's life, so its
  // counts stay in the totals after the engine is gone.
  CycleTally* NewCycleTally();
  void FusedGroup(uint64_t bytes);
  void StallWarning();
  // A stretch of time with at least one allreduce outstanding ended.
  void AllreduceBusy(double seconds);
  // A training step completed now; the first only starts the clock.
  void Step(Clock::time_point now = Clock::now());
  // The GPU this process computes on (the NCCL backend sets it when it
  // starts); reports name it from then on. Null: none.
  void SetGpuReader(GpuReader reader);

  // Prometheus samples of everything, each labelled with `labels` (rank,
  // host, job), plus the process's CPU, memory and GPU read now.
  std::string Report(const metrics::Labels& labels) const;

 private:
  std::atomic<bool> enabled_{true};
  mutable std::mutex mu_;
  OpMap ops_;  // by (op, transport)
  Histogram negotiation_, steps_;
  uint64_t stalls_ = 0;
  // Guarded by mu_ (the list; the counts are the tallies' own).
  std::deque<CycleTally> tallies_;
  uint64_t fusion_bytes_ = 0;
  double allreduce_busy_ = 0;
  std::optional<Clock::time_point> last_step_;
  GpuReader gpu_;
};

}  // namespace hvd::runtime
