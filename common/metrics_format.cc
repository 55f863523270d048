#include "common/metrics_format.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace hvd::metrics {
namespace {

const char* TypeName(Type t) {
  switch (t) {
    case Type::kCounter:
      return "counter";
    case Type::kGauge:
      return "gauge";
    case Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

std::string FormatValue(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 9e15) {
    return std::to_string(static_cast<int64_t>(v));
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

// Whether `line` is a sample of family `f` (its name, or a histogram's
// _bucket/_sum/_count), followed by '{' or ' '.
bool OfFamily(std::string_view line, const Family& f) {
  std::string_view name = f.name;
  if (line.substr(0, name.size()) != name) return false;
  std::string_view rest = line.substr(name.size());
  if (f.type == Type::kHistogram) {
    for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
      if (rest.substr(0, suffix.size()) == suffix) {
        rest = rest.substr(suffix.size());
        break;
      }
    }
  }
  return !rest.empty() && (rest[0] == '{' || rest[0] == ' ');
}

}  // namespace

const std::vector<Family>& Families() {
  static const std::vector<Family> families = {
      {"hvd_collective_calls_total", Type::kCounter,
       "Collective operations run, by operation (a fused group counts once)."},
      {"hvd_collective_tensors_total", Type::kCounter,
       "Tensors the collectives carried, by operation."},
      {"hvd_collective_bytes_total", Type::kCounter,
       "Bytes of the tensors the collectives carried, by operation."},
      {"hvd_collective_seconds", Type::kHistogram,
       "Time to run one collective (a fused group), by operation."},
      {"hvd_negotiation_seconds", Type::kHistogram,
       "Time of a cycle's negotiation, waiting for the other ranks "
       "included."},
      {"hvd_response_cache_hits_total", Type::kCounter,
       "Requests the response cache knew (sent as a bit)."},
      {"hvd_response_cache_misses_total", Type::kCounter,
       "Requests sent in full."},
      {"hvd_fusion_buffer_bytes", Type::kGauge,
       "Bytes of the last fused group of several tensors."},
      {"hvd_stall_warnings_total", Type::kCounter,
       "Stall warnings (tensors some ranks submitted and others did not)."},
      {"hvd_allreduce_busy_seconds_total", Type::kCounter,
       "Time with at least one allreduce submitted and not yet complete "
       "(negotiation, waiting for other ranks and the transfer)."},
      {"hvd_step_seconds", Type::kHistogram,
       "Time between training steps (what DistributedGradients or the "
       "Python DistributedOptimizer synchronise)."},
      {"process_cpu_seconds_total", Type::kCounter,
       "CPU time of the worker process (user and system)."},
      {"process_resident_memory_bytes", Type::kGauge,
       "Resident memory of the worker process."},
      {"hvd_host_memory_bytes", Type::kGauge,
       "Memory of the worker's host (MemTotal)."},
      {"hvd_host_cpus", Type::kGauge, "CPUs of the worker's host."},
      {"hvd_gpu_memory_used_bytes", Type::kGauge,
       "Memory in use on the worker's GPU (every process's)."},
      {"hvd_gpu_memory_total_bytes", Type::kGauge,
       "Memory of the worker's GPU."},
      {"hvd_gpu_utilization_ratio", Type::kGauge,
       "Share of the driver's last sample period in which a kernel ran on "
       "the worker's GPU (0 to 1)."},
  };
  return families;
}

const std::vector<double>& LatencyBuckets() {
  static const std::vector<double> buckets(std::begin(kLatencyBounds),
                                           std::end(kLatencyBounds));
  return buckets;
}

std::string FormatLabels(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ",";
    out += labels[i].first + "=\"";
    for (char c : labels[i].second) {
      if (c == '\\' || c == '"') {
        out += '\\';
        out += c;
      } else if (c == '\n') {
        out += "\\n";
      } else {
        out += c;
      }
    }
    out += "\"";
  }
  return out + "}";
}

std::string Sample(std::string_view name, const Labels& labels, double value) {
  return std::string(name) + FormatLabels(labels) + " " + FormatValue(value) +
         "\n";
}

std::string HistogramSamples(std::string_view name, const Labels& labels,
                             const std::vector<double>& buckets,
                             const std::vector<uint64_t>& counts, double sum) {
  std::string out;
  const std::string bucket = std::string(name) + "_bucket";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= buckets.size(); ++i) {
    cumulative += i < counts.size() ? counts[i] : 0;
    Labels with = labels;
    with.push_back(
        {"le", i < buckets.size() ? FormatValue(buckets[i]) : "+Inf"});
    out += Sample(bucket, with, static_cast<double>(cumulative));
  }
  out += Sample(std::string(name) + "_sum", labels, sum);
  out += Sample(std::string(name) + "_count", labels,
                static_cast<double>(cumulative));
  return out;
}

std::string Exposition(const std::vector<std::string>& reports,
                       const std::vector<Family>& extra) {
  std::vector<std::string_view> lines;
  for (const std::string& r : reports) {
    size_t start = 0;
    while (start < r.size()) {
      size_t end = r.find('\n', start);
      if (end == std::string::npos) end = r.size();
      if (end > start)
        lines.push_back(std::string_view(r).substr(start, end - start));
      start = end + 1;
    }
  }
  std::string out;
  auto emit = [&](const Family& f) {
    std::string samples;
    for (std::string_view l : lines) {
      if (OfFamily(l, f)) samples.append(l).append("\n");
    }
    if (samples.empty()) return;
    out += std::string("# HELP ") + f.name + " " + f.help + "\n";
    out += std::string("# TYPE ") + f.name + " " + TypeName(f.type) + "\n";
    out += samples;
  };
  for (const Family& f : Families()) emit(f);
  for (const Family& f : extra) emit(f);
  return out;
}

double SumSamples(const std::string& report, std::string_view name,
                  const Labels& match) {
  double total = 0;
  std::istringstream in(report);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) != 0) continue;
    std::string_view rest = std::string_view(line).substr(name.size());
    if (rest.empty() || (rest[0] != '{' && rest[0] != ' ')) continue;
    bool all = true;
    for (const auto& [k, v] : match) {
      if (line.find(k + "=\"" + v + "\"") == std::string::npos) all = false;
    }
    if (!all) continue;
    size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    total += std::strtod(line.c_str() + space + 1, nullptr);
  }
  return total;
}

}  // namespace hvd::metrics
