#include "launcher/health.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "common/metrics_format.h"

namespace hvd::launcher {
namespace {

// A report's value of `name` (summed over its samples matching `match`).
double Value(const std::string& report, const char* name,
             const metrics::Labels& match = {}) {
  return metrics::SumSamples(report, name, match);
}

std::string LabelOf(const std::string& report, const std::string& label) {
  const std::string key = label + "=\"";
  size_t at = report.find(key);
  if (at == std::string::npos) return "";
  at += key.size();
  return report.substr(at, report.find('"', at) - at);
}

std::string Percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f %%", share * 100);
  return buf;
}

}  // namespace

namespace {

// One report's counters and gauges.
struct Sums {
  // ar_seconds: time waiting on allreduces; ar_transfer: their
  // transfers alone (for the bandwidth).
  double step_sum = 0, step_count = 0, ar_seconds = 0, ar_transfer = 0,
         ar_bytes = 0, cpu = 0, rss = 0, memory = 0, cpus = 0;
  // GPU gauges; gpu_ranks: how many of them (a report without a GPU
  // adds nothing).
  double gpu_util = 0, gpu_util_ranks = 0, gpu_used = 0, gpu_total = 0;
};

Sums SumsOf(const std::string& r) {
  Sums s;
  s.step_sum = Value(r, "hvd_step_seconds_sum");
  s.step_count = Value(r, "hvd_step_seconds_count");
  s.ar_seconds = Value(r, "hvd_allreduce_busy_seconds_total");
  s.ar_transfer = Value(r, "hvd_collective_seconds_sum", {{"op", "allreduce"}});
  s.ar_bytes = Value(r, "hvd_collective_bytes_total", {{"op", "allreduce"}});
  s.cpu = Value(r, "process_cpu_seconds_total");
  s.rss = Value(r, "process_resident_memory_bytes");
  s.memory = Value(r, "hvd_host_memory_bytes");
  s.cpus = Value(r, "hvd_host_cpus");
  if (r.find("hvd_gpu_utilization_ratio{") != std::string::npos) {
    s.gpu_util = Value(r, "hvd_gpu_utilization_ratio");
    s.gpu_util_ranks = 1;
  }
  s.gpu_used = Value(r, "hvd_gpu_memory_used_bytes");
  s.gpu_total = Value(r, "hvd_gpu_memory_total_bytes");
  return s;
}

// A host's ranks together: counters as the interval's increase, gauges
// at its end.
struct HostSums {
  Sums delta;
  double rss = 0, memory = 0, cpus = 0;
  double gpu_util = 0, gpu_util_ranks = 0;
  // By GPU: ranks sharing one read the same device's memory.
  std::map<std::string, std::pair<double, double>> gpu_memory;
  int ranks = 0;
  std::string host;
};

// By host, or (`by_rank`) by rank, zero-padded so that the map's order
// is the ranks'.
std::map<std::string, HostSums> SumByHost(
    const std::vector<std::string>& before,
    const std::vector<std::string>& after, bool by_rank = false) {
  std::map<std::string, Sums> earlier;
  for (const std::string& r : before) {
    earlier[LabelOf(r, "host") + "/" + LabelOf(r, "rank")] = SumsOf(r);
  }
  std::map<std::string, HostSums> hosts;
  for (const std::string& r : after) {
    const std::string host = LabelOf(r, "host");
    char rank_key[16];
    std::snprintf(rank_key, sizeof(rank_key), "%08d",
                  std::atoi(LabelOf(r, "rank").c_str()));
    Sums now = SumsOf(r);
    Sums then;
    // The same worker's earlier report; a worker new since then counts
    // from zero.
    auto it = earlier.find(host + "/" + LabelOf(r, "rank"));
    if (it != earlier.end()) then = it->second;
    HostSums& a = hosts[by_rank ? rank_key : host];
    a.host = host;
    a.delta.step_sum += now.step_sum - then.step_sum;
    a.delta.step_count += now.step_count - then.step_count;
    a.delta.ar_seconds += now.ar_seconds - then.ar_seconds;
    a.delta.ar_transfer += now.ar_transfer - then.ar_transfer;
    a.delta.ar_bytes += now.ar_bytes - then.ar_bytes;
    a.delta.cpu += now.cpu - then.cpu;
    a.rss += now.rss;
    a.memory = now.memory;
    a.cpus = now.cpus;
    a.gpu_util += now.gpu_util;
    a.gpu_util_ranks += now.gpu_util_ranks;
    if (now.gpu_total > 0) {
      a.gpu_memory[LabelOf(r, "gpu")] = {now.gpu_used, now.gpu_total};
    }
    ++a.ranks;
  }
  return hosts;
}

HostHealth HealthOf(const std::string& host, const HostSums& a, double seconds,
                    int size) {
  HostHealth h;
  h.host = host;
  if (a.delta.step_count > 0) h.step_s = a.delta.step_sum / a.delta.step_count;
  // Each rank's share of its own time, averaged over the host's ranks.
  const double busy =
      a.delta.step_count > 0 ? a.delta.step_sum : seconds * a.ranks;
  if (busy > 0) h.allreduce_share = std::min(1.0, a.delta.ar_seconds / busy);
  if (a.delta.ar_transfer > 0 && size > 1) {
    // Per rank: its bytes over its transfer time, times the ring's
    // 2(n-1)/n.
    h.bus_bytes_per_s =
        a.delta.ar_bytes / a.delta.ar_transfer * 2.0 * (size - 1) / size;
  }
  if (seconds > 0 && a.cpus > 0) {
    h.cpu_share = a.delta.cpu / (seconds * a.cpus);
  }
  if (a.memory > 0) h.memory_share = a.rss / a.memory;
  if (a.gpu_util_ranks > 0) h.gpu_share = a.gpu_util / a.gpu_util_ranks;
  double used = 0, total = 0;
  for (const auto& [gpu, m] : a.gpu_memory) {
    used += m.first;
    total += m.second;
  }
  if (total > 0) h.gpu_memory_share = used / total;
  return h;
}

}  // namespace

std::vector<HostHealth> Health(const std::vector<std::string>& before,
                               const std::vector<std::string>& after,
                               double seconds, int size) {
  std::vector<HostHealth> out;
  for (const auto& [host, sums] : SumByHost(before, after)) {
    out.push_back(HealthOf(host, sums, seconds, size));
  }
  return out;
}

std::vector<HostHealth> RankHealth(const std::vector<std::string>& before,
                                   const std::vector<std::string>& after,
                                   double seconds, int size) {
  std::vector<HostHealth> out;
  for (const auto& [key, sums] : SumByHost(before, after, true)) {
    HostHealth h = HealthOf(sums.host, sums, seconds, size);
    h.rank = std::atoi(key.c_str());
    h.cpu_share = -1;  // a host's figure: its ranks share its CPUs
    out.push_back(h);
  }
  return out;
}

HealthMarks Marks(const HostHealth& h) {
  HealthMarks m;
  m.allreduce = h.allreduce_share > 0.2;
  m.cpu = h.cpu_share >= 0 && h.cpu_share < 0.7;
  m.memory = h.memory_share > 0.9;
  m.gpu = h.gpu_share >= 0 && h.gpu_share < 0.7;
  m.gpu_memory = h.gpu_memory_share > 0.9;
  return m;
}

std::string HealthLine(const HostHealth& h) {
  const HealthMarks marks = Marks(h);
  std::string out = "host " + h.host + ":";
  char buf[64];
  auto add = [&](const std::string& text, bool bad) {
    out += " " + text + (bad ? " !" : "") + ",";
  };
  if (h.step_s >= 0) {
    std::snprintf(buf, sizeof(buf), "step %.3f s", h.step_s);
    add(buf, false);
  } else {
    add("no steps", false);
  }
  if (h.allreduce_share >= 0) {
    add("allreduce " + Percent(h.allreduce_share) + " of " +
            (h.step_s >= 0 ? "step" : "time"),
        marks.allreduce);
  }
  if (h.bus_bytes_per_s >= 0) {
    std::snprintf(buf, sizeof(buf), "bus %.2f GB/s", h.bus_bytes_per_s / 1e9);
    add(buf, false);
  }
  if (h.cpu_share >= 0) add("CPU " + Percent(h.cpu_share), marks.cpu);
  if (h.memory_share >= 0) {
    add("memory " + Percent(h.memory_share), marks.memory);
  }
  if (h.gpu_share >= 0) add("GPU " + Percent(h.gpu_share), marks.gpu);
  if (h.gpu_memory_share >= 0) {
    add("GPU memory " + Percent(h.gpu_memory_share), marks.gpu_memory);
  }
  out.pop_back();  // the last comma
  return out;
}

std::string HealthSummary(const std::vector<HostHealth>& hosts) {
  std::string out =
      "job summary (healthy: allreduce under 20 % of a step, CPU and GPU "
      "over 70 %, memory under 90 %):\n";
  std::set<std::string> advice;
  for (const HostHealth& h : hosts) {
    out += "  " + HealthLine(h) + "\n";
    const HealthMarks marks = Marks(h);
    if (marks.allreduce) {
      advice.insert(
          "allreduce takes " + Percent(h.allreduce_share) +
          " of a step: raise --fusion-threshold-mb so more gradients travel "
          "together, try --hierarchical-allreduce across hosts, or a larger "
          "batch size so each step computes more per byte sent");
    }
    if (marks.cpu) {
      advice.insert("CPU is busy " + Percent(h.cpu_share) +
                    " of the time: the ranks wait (for data, or for each "
                    "other): a larger batch size, more data-loading threads, "
                    "or fewer ranks per host");
    }
    if (marks.memory) {
      advice.insert("memory is " + Percent(h.memory_share) +
                    " full: a smaller batch size, or fewer ranks per host");
    }
    if (marks.gpu) {
      advice.insert("the GPU computes " + Percent(h.gpu_share) +
                    " of the time: it waits for input or for the "
                    "allreduce: a larger batch size, more data-loading "
                    "workers, or a higher --fusion-threshold-mb");
    }
    if (marks.gpu_memory) {
      advice.insert("GPU memory is " + Percent(h.gpu_memory_share) +
                    " full: a smaller batch size, or one rank per GPU");
    }
  }
  for (const std::string& a : advice) out += "  to try: " + a + "\n";
  return out;
}

}  // namespace hvd::launcher
