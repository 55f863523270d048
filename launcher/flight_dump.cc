#include "launcher/flight_dump.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "common/parse.h"
#include "launcher/flight_analysis.h"
#include "rendezvous/flight_keys.h"

namespace hvd::launcher {
namespace {

// The next request's number, counted in the rendezvous so that workers
// that start later know which to wait for.
StatusOr<uint64_t> NextRequest(JobRendezvous& job) {
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

}  // namespace

std::string FlightDumpDir(const std::string& job_id) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/hvd-flight-" + job_id;
}

std::vector<std::string> DumpFlightRecorders(
    JobRendezvous& job, std::chrono::milliseconds timeout) {
  auto n = NextRequest(job);
  if (!n.ok()) return {"flight recorder dump failed: " + n.status().ToString()};
  std::vector<rendezvous::Member> asked;
  std::vector<std::string> keys;
  for (const rendezvous::Member& m : job.Members()) {
    if (m.exit_status || m.generation == 0) continue;  // nobody to answer
    asked.push_back(m);
    keys.push_back(rendezvous::FlightDumpKey(*n, m.host, m.slot));
  }
  std::vector<std::string> dumps(keys.size());
  std::vector<bool> answered(keys.size(), false);
  if (auto all = job.Wait(keys, timeout); all.ok()) {
    dumps = std::move(*all);
    answered.assign(keys.size(), true);
  } else {
    for (size_t i = 0; i < keys.size(); ++i) {
      auto one = job.Get(keys[i]);
      if (one.ok()) dumps[i] = std::move(*one);
      answered[i] = one.ok();
    }
  }
  const std::filesystem::path dir =
      std::filesystem::path(FlightDumpDir(job.access().job_id)) /
      std::to_string(*n);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return {"flight recorder dump " + std::to_string(*n) + ": cannot create " +
            dir.string() + ": " + ec.message()};
  }
  size_t written = 0;
  std::string silent;
  std::vector<FlightRank> parsed;
  for (size_t i = 0; i < asked.size(); ++i) {
    const std::string who = "rank " + std::to_string(asked[i].rank) +
                            " (host " + asked[i].host + ")";
    if (!answered[i]) {
      silent += (silent.empty() ? "" : ", ") + who;
      continue;
    }
    const auto path = dir / ("rank." + std::to_string(asked[i].rank) + ".json");
    if (Status s = WriteFile(path, dumps[i]); !s.ok()) return {s.ToString()};
    ++written;
    if (auto r = ParseFlightDump(dumps[i]); r.ok()) {
      parsed.push_back(std::move(*r));
    }
  }
  std::string line = "flight recorder dump " + std::to_string(*n) + ": " +
                     std::to_string(written) + " of " +
                     std::to_string(asked.size()) + " ranks in " + dir.string();
  if (!silent.empty()) line += "; no answer from " + silent;
  std::vector<std::string> lines = {line};
  if (!parsed.empty()) {
    for (std::string& l : AnalyzeFlight(parsed)) lines.push_back(std::move(l));
  }
  return lines;
}

}  // namespace hvd::launcher
