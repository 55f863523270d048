#include "rendezvous/server_stats.h"

#include <algorithm>
#include <cctype>

#include "common/metrics_format.h"

namespace hvd::rendezvous {
namespace {

const std::vector<metrics::Family>& Families() {
  static const std::vector<metrics::Family> families = {
      {"hvd_rendezvous_jobs", metrics::Type::kGauge, "Jobs registered now."},
      {"hvd_rendezvous_workers", metrics::Type::kGauge,
       "Workers joined to the jobs now."},
      {"hvd_rendezvous_blocked_waits", metrics::Type::kGauge,
       "Waits and barriers blocked in the daemon now."},
      {"hvd_rendezvous_calls_total", metrics::Type::kCounter,
       "Calls answered, by method and status code."},
      {"hvd_rendezvous_refused_total", metrics::Type::kCounter,
       "Calls refused (any status but OK), by method and reason."},
      {"hvd_rendezvous_call_seconds", metrics::Type::kHistogram,
       "Time from a call's arrival to its answer, by method (a blocking "
       "call's wait included)."},
  };
  return families;
}

}  // namespace

void ServerStats::Record(const std::string& method, const Status& s,
                         double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  Method& m = methods_[method];
  if (m.buckets.empty()) m.buckets.assign(metrics::kLatencyBucketCount + 1, 0);
  // gRPC's spelling of the code: UNAUTHENTICATED, NOT_FOUND.
  std::string code(StatusCodeName(s.code()));
  for (char& c : code) c = c == ' ' ? '_' : static_cast<char>(std::toupper(c));
  ++m.by_code[code];
  ++m.buckets[metrics::LatencyBucket(seconds)];
  m.seconds += seconds;
}

std::string ServerStats::Exposition(const JobTable& table) const {
  std::vector<std::string> samples;
  samples.push_back(metrics::Sample("hvd_rendezvous_jobs", {},
                                    static_cast<double>(table.JobCount())));
  samples.push_back(metrics::Sample("hvd_rendezvous_workers", {},
                                    static_cast<double>(table.JoinedCount())));
  samples.push_back(metrics::Sample("hvd_rendezvous_blocked_waits", {},
                                    static_cast<double>(table.BlockedCount())));
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [method, m] : methods_) {
      for (const auto& [code, n] : m.by_code) {
        samples.push_back(metrics::Sample("hvd_rendezvous_calls_total",
                                          {{"method", method}, {"code", code}},
                                          static_cast<double>(n)));
        if (code != "OK") {
          samples.push_back(metrics::Sample(
              "hvd_rendezvous_refused_total",
              {{"method", method}, {"reason", code}}, static_cast<double>(n)));
        }
      }
      samples.push_back(metrics::HistogramSamples(
          "hvd_rendezvous_call_seconds", {{"method", method}},
          metrics::LatencyBuckets(), m.buckets, m.seconds));
    }
  }
  return metrics::Exposition(samples, Families());
}

}  // namespace hvd::rendezvous
