#include "launcher/job_watch.h"

#include <cstdio>

#include "common/metrics_format.h"
#include "common/worker_env.h"
#include "launcher/health.h"

namespace hvd::launcher {
namespace {

// Each line of `text` as one of horovodrun's own.
std::string Prefixed(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += "horovodrun: " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

}  // namespace

void JobWatch::AskWorkers(const LaunchOptions& o,
                          std::map<std::string, std::string>& env) {
  if (o.metrics_port > 0 || o.monitor)
    env[worker_env::kMetricsIntervalMs] = "1000";
}

StatusOr<std::unique_ptr<JobWatch>> JobWatch::Start(const LaunchOptions& o,
                                                    JobRendezvous* job,
                                                    int size) {
  std::unique_ptr<JobWatch> w(new JobWatch());
  w->job_ = job;
  w->size_ = size;
  w->monitor_ = o.monitor;
  w->interval_ = std::chrono::seconds(o.monitor_interval_s);
  w->start_ = std::chrono::steady_clock::now();
  if (o.metrics_port > 0) {
    const std::string job_id = job->access().job_id;
    HVD_ASSIGN_OR_RETURN(
        w->server_,
        metrics::HttpServer::Start(o.metrics_port, [job, size, job_id] {
          static const std::vector<metrics::Family> kLauncher = {
              {"hvd_job_workers", metrics::Type::kGauge,
               "Workers the launcher runs."}};
          std::vector<std::string> reports = job->MetricsReports();
          reports.push_back(
              metrics::Sample("hvd_job_workers", {{"job", job_id}}, size));
          return metrics::Exposition(reports, kLauncher);
        }));
  }
  if (o.monitor) w->thread_ = std::thread([raw = w.get()] { raw->Loop(); });
  return w;
}

void JobWatch::Finish() {
  if (finished_) return;
  finished_ = true;
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  if (!monitor_) return;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
          .count();
  const std::string text =
      HealthSummary(Health({}, job_->MetricsReports(), seconds, size_));
  std::fprintf(stderr, "%s", Prefixed(text).c_str());
}

JobWatch::~JobWatch() { Finish(); }

void JobWatch::Loop() {
  std::vector<std::string> before = job_->MetricsReports();
  auto then = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval_, [this] { return stop_; })) {
    lock.unlock();
    std::vector<std::string> now = job_->MetricsReports();
    const auto t = std::chrono::steady_clock::now();
    std::string lines;
    for (const HostHealth& h :
         Health(before, now, std::chrono::duration<double>(t - then).count(),
                size_)) {
      lines += "monitor: " + HealthLine(h) + "\n";
    }
    std::fprintf(stderr, "%s", Prefixed(lines).c_str());
    before = std::move(now);
    then = t;
    lock.lock();
  }
}

}  // namespace hvd::launcher
