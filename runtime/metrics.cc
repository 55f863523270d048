#include "runtime/metrics.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include "runtime/engine/request.h"

namespace hvd::runtime {
namespace {

// CPU seconds (user + system) and resident bytes of this process, from
// /proc; nullopt where /proc cannot tell.
std::optional<std::pair<double, double>> ProcessUsage() {
  std::ifstream stat("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(stat)),
                   std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  double utime = 0, stime = 0, rss_pages = 0;
  // Fields after the command: state is the 3rd of stat(5); utime the 14th,
  // stime the 15th, rss the 24th.
  for (int i = 3; fields >> f; ++i) {
    if (i == 14) utime = std::stod(f);
    if (i == 15) stime = std::stod(f);
    if (i == 24) {
      rss_pages = std::stod(f);
      break;
    }
  }
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  return std::make_pair((utime + stime) / ticks, rss_pages * page);
}

double HostMemoryBytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (meminfo >> key >> kb >> unit) {
    if (key == "MemTotal:") return kb * 1024;
  }
  return 0;
}

}  // namespace

Metrics& Metrics::Process() {
  static Metrics* metrics = new Metrics();  // lives as long as the process
  return *metrics;
}

void Metrics::Histogram::Add(double seconds) {
  ++counts[metrics::LatencyBucket(seconds)];
  sum += seconds;
}

void Metrics::Collective(const std::string& op, const std::string& transport,
                         int tensors, uint64_t bytes, double seconds) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  Op& o = ops_[{op, transport}];
  ++o.calls;
  o.tensors += static_cast<uint64_t>(tensors);
  o.bytes += bytes;
  o.seconds.Add(seconds);
}

void Metrics::Negotiation(double seconds) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  negotiation_.Add(seconds);
}

void Metrics::CycleTally::Counts::Add(double seconds) {
  SingleWriterAdd<uint64_t>(counts[metrics::LatencyBucket(seconds)], 1);
  SingleWriterAdd(sum, seconds);
}

void Metrics::CycleTally::Express(double negotiation, uint64_t bytes,
                                  double seconds, double busy) {
  if (!enabled_.load(std::memory_order_relaxed)) return;
  negotiation_.Add(negotiation);
  seconds_.Add(seconds);
  SingleWriterAdd<uint64_t>(calls_, 1);
  SingleWriterAdd(bytes_, bytes);
  if (busy >= 0) SingleWriterAdd(busy_, busy);
}

void Metrics::CycleTally::CacheLookup(bool hit) {
  if (!enabled_.load(std::memory_order_relaxed)) return;
  SingleWriterAdd<uint64_t>(hit ? cache_hits_ : cache_misses_, 1);
}

void Metrics::CycleTally::AddTo(OpMap& ops, Histogram& negotiation,
                                double& busy, uint64_t& hits,
                                uint64_t& misses) const {
  hits += cache_hits_.load(std::memory_order_relaxed);
  misses += cache_misses_.load(std::memory_order_relaxed);
  const uint64_t calls = calls_.load(std::memory_order_relaxed);
  if (calls == 0) return;
  Op& o = ops[{OpMetricName(OpType::kAllreduce), "negotiation"}];
  o.calls += calls;
  o.tensors += calls;
  o.bytes += bytes_.load(std::memory_order_relaxed);
  for (size_t i = 0; i <= metrics::kLatencyBucketCount; ++i) {
    o.seconds.counts[i] += seconds_.counts[i].load(std::memory_order_relaxed);
    negotiation.counts[i] +=
        negotiation_.counts[i].load(std::memory_order_relaxed);
  }
  o.seconds.sum += seconds_.sum.load(std::memory_order_relaxed);
  negotiation.sum += negotiation_.sum.load(std::memory_order_relaxed);
  busy += busy_.load(std::memory_order_relaxed);
}

Metrics::CycleTally* Metrics::NewCycleTally() {
  std::lock_guard<std::mutex> lock(mu_);
  return &tallies_.emplace_back(enabled_);
}

void Metrics::FusedGroup(uint64_t bytes) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  fusion_bytes_ = bytes;
}

void Metrics::StallWarning() {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  ++stalls_;
}

void Metrics::AllreduceBusy(double seconds) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  allreduce_busy_ += seconds;
}

void Metrics::Step(Clock::time_point now) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (last_step_) {
    steps_.Add(std::chrono::duration<double>(now - *last_step_).count());
  }
  last_step_ = now;
}

void Metrics::SetGpuReader(GpuReader reader) {
  std::lock_guard<std::mutex> lock(mu_);
  gpu_ = std::move(reader);
}

std::string Metrics::Report(const metrics::Labels& labels) const {
  using metrics::HistogramSamples;
  using metrics::Sample;
  const auto& buckets = metrics::LatencyBuckets();
  std::string out;
  GpuReader gpu;
  {
    std::lock_guard<std::mutex> lock(mu_);
    gpu = gpu_;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The express tallies added to copies of the totals they belong to.
    OpMap ops = ops_;
    Histogram negotiation = negotiation_;
    double busy = allreduce_busy_;
    uint64_t hits = 0, misses = 0;
    for (const CycleTally& t : tallies_) {
      t.AddTo(ops, negotiation, busy, hits, misses);
    }
    for (const auto& [key, o] : ops) {
      metrics::Labels with = labels;
      with.push_back({"op", key.first});
      with.push_back({"transport", key.second});
      out += Sample("hvd_collective_calls_total", with,
                    static_cast<double>(o.calls));
      out += Sample("hvd_collective_tensors_total", with,
                    static_cast<double>(o.tensors));
      out += Sample("hvd_collective_bytes_total", with,
                    static_cast<double>(o.bytes));
      out += HistogramSamples("hvd_collective_seconds", with, buckets,
                              o.seconds.counts, o.seconds.sum);
    }
    out += HistogramSamples("hvd_negotiation_seconds", labels, buckets,
                            negotiation.counts, negotiation.sum);
    out += Sample("hvd_response_cache_hits_total", labels,
                  static_cast<double>(hits));
    out += Sample("hvd_response_cache_misses_total", labels,
                  static_cast<double>(misses));
    out += Sample("hvd_fusion_buffer_bytes", labels,
                  static_cast<double>(fusion_bytes_));
    out += Sample("hvd_stall_warnings_total", labels,
                  static_cast<double>(stalls_));
    out += Sample("hvd_allreduce_busy_seconds_total", labels, busy);
    out += HistogramSamples("hvd_step_seconds", labels, buckets, steps_.counts,
                            steps_.sum);
  }
  if (auto usage = ProcessUsage()) {
    out += Sample("process_cpu_seconds_total", labels, usage->first);
    out += Sample("process_resident_memory_bytes", labels, usage->second);
  }
  out += Sample("hvd_host_memory_bytes", labels, HostMemoryBytes());
  out += Sample("hvd_host_cpus", labels,
                static_cast<double>(std::thread::hardware_concurrency()));
  // Read outside the lock: the driver may take a while to answer, and the
  // engine must not wait on it.
  if (gpu) {
    if (auto u = gpu()) {
      metrics::Labels with = labels;
      with.push_back({"gpu", std::to_string(u->device)});
      if (u->memory_used_bytes >= 0) {
        out += Sample("hvd_gpu_memory_used_bytes", with, u->memory_used_bytes);
        out +=
            Sample("hvd_gpu_memory_total_bytes", with, u->memory_total_bytes);
      }
      if (u->utilization >= 0) {
        out += Sample("hvd_gpu_utilization_ratio", with, u->utilization);
      }
    }
  }
  return out;
}

}  // namespace hvd::runtime
