// hvd's metrics as Prometheus names them: the families every rank reports
// (one table, read by libhvd, which samples them, and by horovodrun, which
// serves them), and the text exposition format. Pure.
//
// A rank's report is exposition text without HELP/TYPE lines, every
// sample labelled with its rank, host and job; the launcher puts the ranks'
// samples under one HELP/TYPE header per family.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace hvd::metrics {

enum class Type { kCounter, kGauge, kHistogram };

struct Family {
  const char* name;
  Type type;
  const char* help;
};

// Every family a rank reports, in exposition order.
const std::vector<Family>& Families();

// The latency buckets (seconds) of every histogram: 10 us to 30 s.
inline constexpr double kLatencyBounds[] = {
    1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1, 3, 10, 30};
inline constexpr size_t kLatencyBucketCount = std::size(kLatencyBounds);
const std::vector<double>& LatencyBuckets();  // the same, as a vector
// The bucket `seconds` counts in: the first bound at or above it, or
// kLatencyBucketCount (+Inf). Searched from the bottom, where most
// latencies fall (inline: a small allreduce counts its time in two).
inline size_t LatencyBucket(double seconds) {
  size_t i = 0;
  while (i < kLatencyBucketCount && seconds > kLatencyBounds[i]) ++i;
  return i;
}

using Labels = std::vector<std::pair<std::string, std::string>>;

// `{k="v",...}` with Prometheus' escaping; "" for no labels.
std::string FormatLabels(const Labels& labels);

// A sample line: NAME{LABELS} VALUE\n (integers without a decimal point).
std::string Sample(std::string_view name, const Labels& labels, double value);

// A histogram's lines: cumulative _bucket{le=...} lines, +Inf, _sum and
// _count. `counts` holds the per-bucket counts (not cumulative), one more
// than the buckets (the last: above the largest).
std::string HistogramSamples(std::string_view name, const Labels& labels,
                             const std::vector<double>& buckets,
                             const std::vector<uint64_t>& counts, double sum);

// The exposition of the ranks' reports (in any order): each family of
// Families() and then of `extra` under its HELP and TYPE, its samples from
// every report. Lines of no known family are dropped.
std::string Exposition(const std::vector<std::string>& reports,
                       const std::vector<Family>& extra = {});

// The value of the samples of `name` in `report` whose labels include all
// of `match` (summed when several match); 0 when none does.
double SumSamples(const std::string& report, std::string_view name,
                  const Labels& match = {});

}  // namespace hvd::metrics
