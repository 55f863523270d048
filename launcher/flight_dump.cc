#include "launcher/flight_dump.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/parse.h"
#include "launcher/flight_analysis.h"
#include "rendezvous/flight_keys.h"

namespace hvd::launcher {
namespace {

// The next request's number, counted in the rendezvous so that workers
// that start later know which to wait for.
StatusOr<uint64_t> NextRequest(JobRendezvous& job) {
  // SIGUSR1, a worker's ask and /debug/collectives come from two threads.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  uint64_t n = 1;
  if (auto count = job.Get(rendezvous::kFlightCountKey); count.ok()) {
    HVD_ASSIGN_OR_RETURN(
        int64_t was,
        ParseInt64(*count, rendezvous::kFlightCountKey, 0, INT64_MAX));
    n = static_cast<uint64_t>(was) + 1;
  }
  HVD_RETURN_IF_ERROR(job.Set(rendezvous::kFlightCountKey, std::to_string(n)));
  HVD_RETURN_IF_ERROR(job.Set(rendezvous::FlightRequestKey(n), "dump"));
  return n;
}

Status WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) {
    return Status::Unavailable(path.string(), "cannot write the dump");
  }
  return Status::Ok();
}

// The answers to request `n` from every running member, and the records
// that members whose collectives failed left (rendezvous::FlightLastKey):
// for those that exited, and those that do not answer (in time).
struct Gathered {
  std::vector<rendezvous::Member> members;        // that joined
  std::vector<std::optional<std::string>> dumps;  // nullopt: none
  std::vector<bool> asked;                        // running when asked
};

// A member's record: its answer to request `n`, else what it left when its
// collectives failed.
std::optional<std::string> RecordOf(JobRendezvous& job, uint64_t n,
                                    const rendezvous::Member& m) {
  if (auto answer = job.Get(rendezvous::FlightDumpKey(n, m.host, m.slot));
      answer.ok()) {
    return std::move(*answer);
  }
  if (auto last = job.Get(rendezvous::FlightLastKey(m.host, m.slot));
      last.ok()) {
    return std::move(*last);
  }
  return std::nullopt;
}

Gathered Gather(JobRendezvous& job, uint64_t n,
                std::chrono::milliseconds timeout) {
  Gathered g;
  std::vector<size_t> waiting;  // running members that have not answered
  for (const rendezvous::Member& m : job.Members()) {
    if (m.generation == 0) continue;  // never joined: no record
    g.members.push_back(m);
    g.asked.push_back(!m.exit_status);
    if (!m.exit_status) waiting.push_back(g.members.size() - 1);
  }
  g.dumps.resize(g.members.size());
  // In slices: a member that is failing too (and left its record on the
  // way out) is not waited for to the end.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!waiting.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    std::vector<std::string> keys;
    for (size_t i : waiting) {
      keys.push_back(
          rendezvous::FlightDumpKey(n, g.members[i].host, g.members[i].slot));
    }
    if (auto all =
            job.Wait(keys, std::min(left, std::chrono::milliseconds(100)));
        all.ok()) {
      for (size_t k = 0; k < keys.size(); ++k) {
        g.dumps[waiting[k]] = std::move((*all)[k]);
      }
      break;
    }
    std::vector<size_t> still;
    for (size_t i : waiting) {
      g.dumps[i] = RecordOf(job, n, g.members[i]);
      if (!g.dumps[i]) still.push_back(i);
    }
    waiting = std::move(still);
  }
  for (size_t i = 0; i < g.members.size(); ++i) {
    if (!g.dumps[i]) g.dumps[i] = RecordOf(job, n, g.members[i]);
  }
  return g;
}

// A collective not finished, or failed: something to show.
bool AnyInFlight(const std::vector<FlightRank>& ranks) {
  for (const FlightRank& r : ranks) {
    for (const FlightOp& op : r.ops) {
      if (op.submitted_us && (!op.finished_us || op.failed)) return true;
    }
  }
  return false;
}

// One request's answers, read as records: every member that joined, with
// a placeholder (FlightRank::no_record) for those without one.
struct Collected {
  uint64_t n = 0;
  Gathered g;
  std::vector<FlightRank> ranks;
  bool any_record = false;
};

StatusOr<Collected> Collect(JobRendezvous& job,
                            std::chrono::milliseconds timeout) {
  Collected c;
  HVD_ASSIGN_OR_RETURN(c.n, NextRequest(job));
  c.g = Gather(job, c.n, timeout);
  for (size_t i = 0; i < c.g.members.size(); ++i) {
    const rendezvous::Member& m = c.g.members[i];
    FlightRank r;
    if (c.g.dumps[i]) {
      auto parsed = ParseFlightDump(*c.g.dumps[i]);
      if (parsed.ok()) r = std::move(*parsed), c.any_record = true;
    }
    r.rank = m.rank;
    r.host = m.host;
    if (!c.g.dumps[i]) {
      r.no_record = m.exit_status ? "it exited with status " +
                                        std::to_string(*m.exit_status)
                                  : std::string("it did not answer");
    }
    c.ranks.push_back(std::move(r));
  }
  return c;
}

// "rank 1 (host b), rank 3 (host c)": the running members that did not
// answer.
std::string Silent(const Gathered& g) {
  std::string silent;
  for (size_t i = 0; i < g.members.size(); ++i) {
    if (g.dumps[i] || !g.asked[i]) continue;
    silent += (silent.empty() ? "" : ", ") +
              rendezvous::RankOnHost(g.members[i].rank, g.members[i].host);
  }
  return silent;
}

}  // namespace

std::string FlightDumpDir(const std::string& job_id) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/hvd-flight-" + job_id;
}

std::vector<std::string> DumpFlightRecorders(JobRendezvous& job,
                                             std::chrono::milliseconds timeout,
                                             const std::string& why,
                                             bool only_in_flight) {
  auto c = Collect(job, timeout);
  if (!c.ok()) return {"flight recorder dump failed: " + c.status().ToString()};
  const Gathered& g = c->g;
  if (!c->any_record || (only_in_flight && !AnyInFlight(c->ranks))) return {};
  const std::string n = std::to_string(c->n);
  const std::filesystem::path dir =
      std::filesystem::path(FlightDumpDir(job.access().job_id)) / n;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return {"flight recorder dump " + n + ": cannot create " + dir.string() +
            ": " + ec.message()};
  }
  size_t written = 0;
  for (size_t i = 0; i < g.members.size(); ++i) {
    if (!g.dumps[i]) continue;
    const auto path =
        dir / ("rank." + std::to_string(g.members[i].rank) + ".json");
    if (Status s = WriteFile(path, *g.dumps[i]); !s.ok()) return {s.ToString()};
    ++written;
  }
  std::string line =
      "flight recorder dump " + n + (why.empty() ? "" : " (" + why + ")") +
      ": " + std::to_string(written) + " of " +
      std::to_string(g.members.size()) + " ranks in " + dir.string();
  const std::string silent = Silent(g);
  if (!silent.empty()) line += "; no answer from " + silent;
  std::vector<std::string> lines = {line};
  for (std::string& l : AnalyzeFlight(c->ranks)) lines.push_back(std::move(l));
  KeepFlightReport(lines);
  return lines;
}

namespace {

struct Reports {
  std::mutex mu;
  FlightReport last;  // guarded by mu
};

Reports& TheReports() {
  static Reports* r = new Reports();  // never destroyed: threads dump late
  return *r;
}

}  // namespace

void KeepFlightReport(std::vector<std::string> lines) {
  Reports& r = TheReports();
  std::lock_guard<std::mutex> lock(r.mu);
  r.last.number++;
  r.last.lines = std::move(lines);
}

FlightReport LastFlightReport() {
  Reports& r = TheReports();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.last;
}

std::string FlightRecordersJson(JobRendezvous& job,
                                std::chrono::milliseconds timeout) {
  nlohmann::json out;
  out["job"] = job.access().job_id;
  auto c = Collect(job, timeout);
  if (!c.ok()) {
    out["error"] = c.status().ToString();
    return out.dump(2) + "\n";
  }
  out["dump"] = c->n;
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t i = 0; i < c->g.members.size(); ++i) {
    const rendezvous::Member& m = c->g.members[i];
    nlohmann::json r = c->g.dumps[i]
                           ? nlohmann::json::parse(*c->g.dumps[i], nullptr,
                                                   /*allow_exceptions=*/false)
                           : nlohmann::json();
    if (!r.is_object()) {
      r = {{"rank", m.rank},
           {"host", m.host},
           {"no_record", c->ranks[i].no_record.value_or("unreadable")}};
    }
    ranks.push_back(std::move(r));
  }
  out["ranks"] = std::move(ranks);
  out["report"] =
      c->any_record ? AnalyzeFlight(c->ranks) : std::vector<std::string>();
  return out.dump(2) + "\n";
}

std::optional<FlightAsk> ParseFlightAsk(const std::string& value) {
  const size_t a = value.find(' ');
  if (a == std::string::npos || a == 0) return std::nullopt;
  const size_t b = value.find(' ', a + 1);
  const std::string kind = value.substr(
      a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
  if (kind != "stall" && kind != "shutdown") return std::nullopt;
  FlightAsk ask;
  ask.token = value.substr(0, a);
  ask.shutdown = kind == "shutdown";
  if (b != std::string::npos) ask.stalled = value.substr(b + 1);
  return ask;
}

std::vector<std::string> AnswerFlightAsk(JobRendezvous& job,
                                         std::string* last_token,
                                         std::string* ends_job) {
  auto value = job.Get(rendezvous::kFlightAskKey);
  if (!value.ok()) return {};
  std::optional<FlightAsk> ask = ParseFlightAsk(*value);
  if (!ask || ask->token == *last_token) return {};
  *last_token = ask->token;
  std::vector<std::string> lines = DumpFlightRecorders(
      job, std::chrono::seconds(10),
      ask->shutdown ? "the stall inspector ends the job" : "a stall",
      /*only_in_flight=*/false);
  // The report's finding follows the dump's own line.
  if (ask->shutdown && lines.size() > 1) *ends_job = lines[1];
  // The asker waits for this before it ends the job.
  (void)job.Set(rendezvous::FlightAskedKey(ask->token), "done");
  return lines;
}

}  // namespace hvd::launcher
