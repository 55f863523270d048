// A running job's metrics: horovodrun --metrics-port serves every rank's
// report in Prometheus' format (checked by promtool, scraped by a real
// Prometheus the test starts), and --monitor's lines and summary show the
// shares they should (a job that only allreduces: near all of a step; one
// that only computes: near none).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>
#include <vector>

#include "tests/util/browser.h"
#include "tests/util/http_get.h"
#include "tests/util/ssh_host.h"
#include "tests/util/subprocess.h"

namespace hvd::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kTimeout = seconds(120);

bool Have(const char* path) { return ::access(path, X_OK) == 0; }

// Polls GET /metrics until every pattern matches (or 120 s pass: a
// deadline for a loaded machine, not a window); the last body. Each rank
// publishes on its own clock, so one rank's figures say nothing of
// another's: the test waits for all it looks at.
std::string WaitForMetrics(int port, const std::vector<std::string>& patterns) {
  std::vector<std::regex> res;
  for (const std::string& p : patterns) res.emplace_back(p);
  std::string body;
  for (int tries = 0; tries < 1200; ++tries) {
    HttpResponse r = HttpGet(port, "/metrics");
    body = r.body;
    if (r.code == 200 &&
        std::all_of(res.begin(), res.end(), [&body](const std::regex& re) {
          return std::regex_search(body, re);
        })) {
      return body;
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  return body;
}

// The "allreduce N % of step" of --monitor's summary line.
int SummaryShare(const std::string& err) {
  std::smatch m;
  const std::regex line(
      R"(horovodrun:   host \S+: step [0-9.]+ s, allreduce (\d+) % of step)");
  if (!std::regex_search(err, m, line)) return -1;
  return std::stoi(m[1]);
}

TEST(MetricsTest, EndpointServesEveryRankAndPassesPromtool) {
  const int port = FreePort("127.0.0.1");
  TempDir dir;
  // The job runs until the test has seen what it looks for.
  const std::string stop = dir.path() + "/stop";
  Subprocess job({HVD_HOROVODRUN, "-np", "2", "--metrics-port",
                  std::to_string(port), HVD_TEST_WORKER, "--steps", "1",
                  "--until-file", stop, "--work", "allreduce"});
  std::vector<std::string> each_rank;
  for (const char* rank : {"0", "1"}) {
    each_rank.push_back(
        std::string(R"(hvd_collective_bytes_total\{rank=")") + rank +
        R"(",host="localhost",job="[0-9a-f]+",op="allreduce",transport="shm"\} [1-9])");
  }
  const std::string body = WaitForMetrics(port, each_rank);
  for (const std::string& pattern : each_rank) {
    EXPECT_TRUE(std::regex_search(body, std::regex(pattern))) << body;
  }
  for (const char* family :
       {"# TYPE hvd_collective_seconds histogram",
        "# TYPE hvd_step_seconds histogram", "# TYPE hvd_job_workers gauge",
        "process_resident_memory_bytes{rank=\"0\"",
        "hvd_allreduce_busy_seconds_total{rank=\"1\""}) {
    EXPECT_NE(body.find(family), std::string::npos) << family << "\n" << body;
  }
  EXPECT_EQ(HttpGet(port, "/nothing-here").code, 404);
  if (Have("/usr/bin/promtool")) {
    const std::string file = dir.Write("metrics.txt", body);
    std::string out;
    EXPECT_TRUE(ShellCapture("/usr/bin/promtool check metrics < " + file, &out))
        << out;
  }
  dir.Write("stop", "");
  Result r = job.Wait(kTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// The live page of a running job: / serves the page, /api/state the job
// and each host's health, which fills in as the workers report (polled: a
// deadline for a loaded machine, not a window), and /chart.js Debian's
// Chart.js where it is installed. The browser's view of it is
// tests/python's live page test.
TEST(MetricsTest, LivePageAndItsStateDuringAJob) {
  const int port = FreePort("127.0.0.1");
  TempDir dir;
  const std::string stop = dir.path() + "/stop";
  const std::string timeline = dir.path() + "/timeline.json";
  Subprocess job(
      {HVD_HOROVODRUN, "-np", "2", "--metrics-port", std::to_string(port),
       "--monitor", "--monitor-interval", "1", HVD_TEST_WORKER, "--steps", "1",
       "--until-file", stop, "--work", "allreduce"},
      {"HOROVOD_TIMELINE=" + timeline});
  nlohmann::json state;
  for (int tries = 0; tries < 1200; ++tries) {
    HttpResponse r = HttpGet(port, "/api/state");
    if (r.code == 200) {
      state = nlohmann::json::parse(r.body, nullptr, false);
      // Both ranks' reports came, with steps in them (the state's rows
      // are arrays in its columns' order: "step" is the third).
      if (!state.is_discarded() && state["hosts"].size() == 1 &&
          !state["hosts"][0][2].is_null() && state["ranks"].size() == 2 &&
          !state["ranks"][0][2].is_null() && !state["ranks"][1][2].is_null()) {
        break;
      }
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_FALSE(state.is_discarded());
  ASSERT_EQ(state["columns"][2], "step") << state.dump();
  EXPECT_EQ(state["job"]["size"], 2) << state.dump();
  EXPECT_EQ(state["job"]["hosts"], nlohmann::json({"localhost:2"}));
  EXPECT_EQ(state["job"]["command"][0], HVD_TEST_WORKER);
  ASSERT_EQ(state["hosts"].size(), 1u) << state.dump();
  EXPECT_EQ(state["hosts"][0][0], "localhost");
  EXPECT_GT(state["hosts"][0][2].get<double>(), 0) << state.dump();
  // All of a step is allreduce here: out of its healthy range (column 3,
  // "ar", and its bit in the last column).
  ASSERT_EQ(state["columns"][3], "ar");
  EXPECT_TRUE(state["hosts"][0].back().get<int>() & (1 << 3)) << state.dump();
  ASSERT_EQ(state["ranks"].size(), 2u) << state.dump();
  EXPECT_EQ(state["ranks"][1][1], 1);
  ASSERT_FALSE(state["series"]["t"].empty());
  EXPECT_TRUE(state["series"]["hosts"].contains("localhost"));
  EXPECT_TRUE(state["series"]["ranks"].contains("1"));
  // The members, on a first poll.
  ASSERT_EQ(state["members"].size(), 2u) << state.dump();
  EXPECT_EQ(state["members"][1][0], 1);
  EXPECT_EQ(state["members"][1][3], 1);           // joined generation 1
  EXPECT_TRUE(state["members"][1][4].is_null());  // running
  // The launcher's lines (--monitor's), numbered.
  bool said = false;
  for (int tries = 0; tries < 1200 && !said; ++tries) {
    nlohmann::json lines = nlohmann::json::parse(
        HttpGet(port, "/api/state?lines=0").body, nullptr, false);
    if (!lines.is_discarded() && lines.contains("lines")) {
      for (const auto& l : lines["lines"]) {
        said = said ||
               l[1].get<std::string>().rfind("monitor: host localhost", 0) == 0;
      }
    }
    if (!said) std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_TRUE(said);
  // Rank 0's timeline so far, which the page links to.
  EXPECT_TRUE(state["timeline"].get<bool>()) << state.dump();
  const HttpResponse trace = HttpGet(port, "/timeline.json");
  EXPECT_EQ(trace.code, 200);
  EXPECT_EQ(trace.body.rfind("[", 0), 0u) << trace.body.substr(0, 200);
  EXPECT_NE(trace.body.find("\"ph\""), std::string::npos);
  // After the newest sample's time, only what came since.
  const double newest = state["series"]["t"].back().get<double>();
  nlohmann::json since = nlohmann::json::parse(
      HttpGet(port, "/api/state?since=" + std::to_string(newest)).body, nullptr,
      false);
  ASSERT_FALSE(since.is_discarded());
  for (const auto& t : since["series"]["t"]) EXPECT_GT(t.get<double>(), newest);
  HttpResponse page = HttpGet(port, "/");
  EXPECT_EQ(page.code, 200);
  EXPECT_NE(page.body.find("<title>hvd job</title>"), std::string::npos);
  EXPECT_NE(page.body.find("/api/state"), std::string::npos);
  if (::access("/usr/share/javascript/chart.js/chart.min.js", R_OK) == 0) {
    HttpResponse chart = HttpGet(port, "/chart.js");
    EXPECT_EQ(chart.code, 200);
    EXPECT_NE(chart.body.find("Chart"), std::string::npos);
  }
  if (!ChromiumPath().empty()) {
    // A real browser renders it: the host's and each rank's row, the
    // allreduce share (all of a step in this job) marked, the charts
    // drawn, the members, and nothing thrown or refused on the console.
    std::vector<std::string> parts = {
        R"(<tr data-host="localhost">)", R"(<tr data-rank="0")",
        R"(<tr data-rank="1")",          R"(<tr data-member="1">)",
        R"(<p id="timeline">)",          R"(<td class="bad">)",
        R"(<p id="error"></p>)"};
    // Chart.js loaded: the note stays empty.
    if (::access("/usr/share/javascript/chart.js/chart.min.js", R_OK) == 0) {
      parts.push_back(R"(<p id="no-charts"></p>)");
    }
    EXPECT_EQ(
        PageLacks("http://127.0.0.1:" + std::to_string(port) + "/", parts,
                  std::string(HVD_SCREENSHOT_DIR) + "/live_page_two_ranks.png"),
        "");
  } else {
    std::printf(
        "no chromium: the page is not rendered "
        "(packaging/install-deps.sh)\n");
  }
  dir.Write("stop", "");
  Result r = job.Wait(kTimeout);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// The summary's shares: a job that only allreduces waits on allreduces
// nearly all of each step; one that only computes, nearly never.
TEST(MetricsTest, MonitorSharesAddUp) {
  Result ar = RunCommand(
      {HVD_HOROVODRUN, "-np", "2", "--monitor", "--monitor-interval", "1",
       // Three intervals at least, so that live lines come however fast
       // the allreduces run.
       HVD_TEST_WORKER, "--steps", "10", "--min-seconds", "3", "--work",
       "allreduce"},
      kTimeout);
  ASSERT_EQ(ar.exit_code, 0) << ar.err;
  EXPECT_GE(SummaryShare(ar.err), 80) << ar.err;
  // A share over 20 % is marked, and the summary says what to try.
  EXPECT_NE(ar.err.find("of step !"), std::string::npos) << ar.err;
  EXPECT_NE(ar.err.find("to try: allreduce takes"), std::string::npos)
      << ar.err;
  // Live lines came while it ran.
  EXPECT_NE(ar.err.find("horovodrun: monitor: host localhost: step"),
            std::string::npos)
      << ar.err;
  Result cpu =
      RunCommand({HVD_HOROVODRUN, "-np", "2", "--monitor", HVD_TEST_WORKER,
                  "--steps", "100", "--work", "compute"},
                 kTimeout);
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const int share = SummaryShare(cpu.err);
  EXPECT_GE(share, 0) << cpu.err;
  EXPECT_LE(share, 10) << cpu.err;
}

// A real Prometheus scrapes a running train_mnist job through the
// launcher, and its query API returns the allreduce bytes of both ranks.
TEST(MetricsTest, PrometheusScrapesARunningJob) {
  if (!Have("/usr/bin/prometheus")) {
    GTEST_SKIP() << "no /usr/bin/prometheus (packaging/install-deps.sh)";
  }
  TempDir dir;
  const int port = FreePort("127.0.0.1");
  const int web = FreePort("127.0.0.1");
  const std::string config =
      dir.Write("prometheus.yml",
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: hvd\n    static_configs:\n"
                "      - targets: ['127.0.0.1:" +
                    std::to_string(port) + "']\n");
  // It trains until the test stops it, however long Prometheus takes.
  Subprocess job({HVD_HOROVODRUN, "-np", "2", "--metrics-port",
                  std::to_string(port), "--monitor", HVD_TRAIN_MNIST,
                  "--train-limit", "6000", "--test-limit", "1000", "--epochs",
                  "1000", "--log-dir", "", "--checkpoint-dir", dir.path()});
  Subprocess prometheus(
      {"/usr/bin/prometheus", "--config.file=" + config,
       "--storage.tsdb.path=" + dir.path() + "/tsdb",
       "--web.listen-address=127.0.0.1:" + std::to_string(web)});
  const std::string query =
      "/api/v1/query?query=hvd_collective_bytes_total%7Bop%3D%22allreduce%22"
      "%7D";
  std::string answer;
  bool both = false;
  for (int tries = 0; tries < 1200 && !both; ++tries) {
    std::this_thread::sleep_for(milliseconds(100));
    HttpResponse r = HttpGet(web, query);
    if (r.code != 200) continue;
    answer = r.body;
    both = answer.find("\"rank\":\"0\"") != std::string::npos &&
           answer.find("\"rank\":\"1\"") != std::string::npos;
  }
  EXPECT_TRUE(both) << answer;
  // The values are bytes moved so far: more than nothing.
  EXPECT_TRUE(
      std::regex_search(answer, std::regex(R"("value":\[[0-9.]+,"[1-9])")))
      << answer;
  // Done looking: stop Prometheus and the job (by their pids).
  kill(prometheus.pid(), SIGTERM);
  prometheus.Wait(seconds(30));
  kill(job.pid(), SIGTERM);
  Result r = job.Wait(kTimeout);
  EXPECT_NE(r.exit_code, -1) << "the job did not stop";
}

}  // namespace
}  // namespace hvd::testing
