#include "launcher/job_watch.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/metrics_format.h"
#include "common/parse.h"
#include "common/worker_env.h"
#include "launcher/flight_dump.h"
#include "launcher/health.h"
#include "launcher/live_page.h"
#include "launcher/say.h"

namespace hvd::launcher {

namespace {

// The workers' HOROVOD_TIMELINE (the flag's, else this environment's), as
// a path from here (the workers start in this directory); "" for none or
// DYNAMIC (opened later by the program, wherever it says).
std::string TimelinePath(const LaunchOptions& o) {
  auto it = o.worker_env.find("HOROVOD_TIMELINE");
  const char* env = std::getenv("HOROVOD_TIMELINE");
  std::string path = it != o.worker_env.end() ? it->second
                     : env != nullptr         ? env
                                              : "";
  if (path.empty() || path == "DYNAMIC") return "";
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.string();
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
  w->stragglers_ = std::make_unique<Stragglers>(size);
  if (o.metrics_port > 0) {
    w->live_ = true;
    w->live_job_.id = job->access().job_id;
    w->live_job_.command = o.command;
    for (const HostSpec& h : o.hosts) {
      w->live_job_.hosts.push_back(h.host + ":" + std::to_string(h.slots));
    }
    w->live_job_.size = size;
    w->timeline_ = TimelinePath(o);
    HVD_ASSIGN_OR_RETURN(w->server_,
                         metrics::HttpServer::Start(o.metrics_port, w->Pages(),
                                                    "--metrics-port"));
  }
  if (o.monitor || o.metrics_port > 0) {
    w->thread_ = std::thread([raw = w.get()] { raw->Loop(); });
  }
  return w;
}

std::map<std::string, metrics::HttpServer::Page> JobWatch::Pages() {
  JobRendezvous* job = job_;
  const int size = size_;
  const std::string job_id = job->access().job_id;
  std::map<std::string, metrics::HttpServer::Page> pages;
  pages["/metrics"] = {
      "text/plain; version=0.0.4; charset=utf-8", [this, job, size, job_id] {
        static const std::vector<metrics::Family> kLauncher = {
            {"hvd_job_workers", metrics::Type::kGauge,
             "Workers the launcher runs."},
            {"hvd_collective_arrival_spread_seconds", metrics::Type::kHistogram,
             "Time between the first and the last rank's submission of "
             "each collective every rank submitted."},
            {"hvd_rank_last_arrivals_total", metrics::Type::kCounter,
             "Collectives this rank was the last to submit."}};
        std::vector<std::string> reports = job->MetricsReports();
        reports.push_back(
            metrics::Sample("hvd_job_workers", {{"job", job_id}}, size));
        CountArrivals();
        reports.push_back(StragglerSamples());
        return metrics::Exposition(reports, kLauncher);
      }};
  // Every rank's flight recorder and the report on them, gathered on
  // each GET (as SIGUSR1's dump, without files).
  pages["/debug/collectives"] = {
      "application/json",
      [job] { return FlightRecordersJson(*job, std::chrono::seconds(10)); }};
  pages["/"] = {"text/html; charset=utf-8", [] { return LivePageHtml(); }};
  // "?since=T&lines=N&flight=F": the series' samples after T, the
  // launcher's lines after the N-th, a flight report newer than the F-th
  // (live_state.h).
  pages["/api/state"].type = "application/json";
  pages["/api/state"].answer = [this](const metrics::HttpServer::Request& req) {
    const std::string& query = req.query;
    double since = -1;
    int64_t lines_after = 0, flight_seen = 0;
    std::vector<std::string> parts;
    for (size_t at = 0; at <= query.size();) {
      size_t end = query.find('&', at);
      if (end == std::string::npos) end = query.size();
      parts.push_back(query.substr(at, end - at));
      at = end + 1;
    }
    for (const std::string& part : parts) {
      if (part.rfind("since=", 0) == 0) {
        auto t = ParseDouble(part.substr(6), "since", 0.0, 1e9);
        if (t.ok()) since = *t;
      } else if (part.rfind("lines=", 0) == 0) {
        auto n = ParseInt64(part.substr(6), "lines", 0, INT64_MAX);
        if (n.ok()) lines_after = *n;
      } else if (part.rfind("flight=", 0) == 0) {
        auto n = ParseInt64(part.substr(7), "flight", 0, INT64_MAX);
        if (n.ok()) flight_seen = *n;
      }
    }
    const double run_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
            .count();
    LiveNews news;
    news.lines = LinesSaidAfter(static_cast<uint64_t>(lines_after));
    news.timeline =
        !timeline_.empty() && ::access(timeline_.c_str(), R_OK) == 0;
    FlightReport flight = LastFlightReport();
    if (flight.number > static_cast<uint64_t>(flight_seen)) {
      news.flight = flight.number;
      news.flight_lines = std::move(flight.lines);
    }
    std::lock_guard<std::mutex> lock(live_mu_);
    news.members_changed = since < 0 || members_changed_s_ > since;
    if (news.members_changed) news.members = members_;
    return metrics::HttpServer::Reply{
        200, LiveStateJson(live_job_, run_s, history_, since, news)};
  };
  // The timeline so far, as rank 0 has written it (a trace without its
  // closing bracket, as the trace viewers take it while a job runs).
  if (!timeline_.empty()) {
    pages["/timeline.json"] = {"application/json", [path = timeline_] {
                                 std::ifstream f(path, std::ios::binary);
                                 return std::string(
                                     std::istreambuf_iterator<char>(f),
                                     std::istreambuf_iterator<char>());
                               }};
  }
  // Debian's Chart.js, read once: served from the installed file, never a
  // CDN.
  std::ifstream chart(kChartJsPath, std::ios::binary);
  if (chart) {
    auto text =
        std::make_shared<std::string>(std::istreambuf_iterator<char>(chart),
                                      std::istreambuf_iterator<char>());
    pages["/chart.js"] = {"application/javascript", [text] { return *text; }};
  }
  return pages;
}

void JobWatch::Sample(std::chrono::steady_clock::time_point t, double seconds,
                      std::vector<std::string>& before) {
  std::vector<std::string> now = job_->MetricsReports();
  std::vector<HostHealth> hosts = Health(before, now, seconds, size_);
  std::vector<HostHealth> ranks = RankHealth(before, now, seconds, size_);
  std::string stragglers;
  int straggler;
  {
    std::lock_guard<std::mutex> lock(stragglers_mu_);
    stragglers = stragglers_->Line();
    straggler = stragglers_->Straggler();
  }
  const double t_s = std::chrono::duration<double>(t - start_).count();
  std::vector<rendezvous::Member> members = job_->Members();
  std::lock_guard<std::mutex> lock(live_mu_);
  if (members != members_) {
    members_ = std::move(members);
    members_changed_s_ = t_s;
  }
  history_.Add(t_s, std::move(hosts), std::move(ranks), std::move(stragglers),
               straggler);
  before = std::move(now);
}

void JobWatch::CountArrivals() {
  std::vector<std::string> reports = job_->ArrivalReports();
  std::lock_guard<std::mutex> lock(stragglers_mu_);
  stragglers_->Update(reports);
}

std::string JobWatch::StragglerSamples() {
  std::lock_guard<std::mutex> lock(stragglers_mu_);
  return stragglers_->Samples(job_->access().job_id);
}

std::string JobWatch::StragglerLine() {
  std::lock_guard<std::mutex> lock(stragglers_mu_);
  const std::string line = stragglers_->Line();
  return line.empty() ? "" : "monitor: stragglers: " + line + "\n";
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
  CountArrivals();  // the workers' last reports came as they shut down
  const std::string text =
      HealthSummary(Health({}, job_->MetricsReports(), seconds, size_)) +
      StragglerLine();
  SayLines(text);
}

JobWatch::~JobWatch() {
  server_.reset();  // its pages use the members below
  Finish();
}

void JobWatch::Loop() {
  std::vector<std::string> before = job_->MetricsReports();
  auto then = std::chrono::steady_clock::now();
  std::vector<std::string> last_second = before;
  auto last_t = then;
  // Arrivals every second (a worker's report holds its last 1,000
  // submissions, published every second); health lines every interval.
  const auto tick = std::chrono::seconds(1);
  auto next_lines = then + interval_;
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, tick, [this] { return stop_; })) {
    lock.unlock();
    CountArrivals();
    const auto t = std::chrono::steady_clock::now();
    if (live_) {
      Sample(t, std::chrono::duration<double>(t - last_t).count(), last_second);
      last_t = t;
    }
    if (monitor_ && t >= next_lines) {
      std::vector<std::string> now = job_->MetricsReports();
      std::string lines;
      for (const HostHealth& h :
           Health(before, now, std::chrono::duration<double>(t - then).count(),
                  size_)) {
        lines += "monitor: " + HealthLine(h) + "\n";
      }
      lines += StragglerLine();
      SayLines(lines);
      before = std::move(now);
      then = t;
      next_lines = t + interval_;
    }
    lock.lock();
  }
}

}  // namespace hvd::launcher
