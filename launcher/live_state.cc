#include "launcher/live_state.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

namespace hvd::launcher {
namespace {

using nlohmann::json;

// A figure to 4 significant digits (what a page shows, in a quarter of
// the bytes), or null where it is absent (negative).
json Figure(double v) {
  if (v < 0) return nullptr;
  if (v == 0) return 0;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(v)));
  return std::round(v * scale) / scale;
}

// The figures a row and a series carry, by their short keys (a page at 16
// ranks polls them every second: see live_state.h).
struct Field {
  const char* key;
  double HostHealth::*value;
};
constexpr Field kFields[] = {{"step", &HostHealth::step_s},
                             {"ar", &HostHealth::allreduce_share},
                             {"bus", &HostHealth::bus_bytes_per_s},
                             {"cpu", &HostHealth::cpu_share},
                             {"mem", &HostHealth::memory_share},
                             {"gpu", &HostHealth::gpu_share},
                             {"gmem", &HostHealth::gpu_memory_share}};

// [host, rank (null for a host's row), the figures in kFields' order
// (null where absent), bad: a bit per figure out of its healthy range].
json Row(const HostHealth& h) {
  json row = json::array({h.host});
  row.push_back(h.rank >= 0 ? json(h.rank) : json(nullptr));
  for (const Field& f : kFields) row.push_back(Figure(h.*f.value));
  const HealthMarks m = Marks(h);
  const bool bad[] = {false,    m.allreduce, false,       m.cpu,
                      m.memory, m.gpu,       m.gpu_memory};
  // Bit i for column i: the figures follow host and rank.
  int mask = 0;
  for (int i = 0; i < 7; ++i) mask |= bad[i] ? 1 << (i + 2) : 0;
  row.push_back(mask);
  return row;
}

// The charts' figures of each host (or rank) over the samples from
// `first` on, aligned with their times: null where a sample lacks it.
json Series(const LiveHistory& history, size_t first, bool ranks,
            const std::vector<const char*>& keys) {
  std::map<std::string, json> out;
  const auto& samples = history.samples();
  const size_t n = samples.size() - first;
  for (size_t i = 0; i < n; ++i) {
    const LiveHistory::Sample& sample = samples[first + i];
    for (const HostHealth& h : ranks ? sample.ranks : sample.hosts) {
      json& s = out[ranks ? std::to_string(h.rank) : h.host];
      for (const char* k : keys) {
        if (!s.contains(k)) s[k] = json::array();
        // Samples before this one that did not have it.
        while (s[k].size() < i) s[k].push_back(nullptr);
      }
      for (const Field& f : kFields) {
        if (s.contains(f.key)) s[f.key].push_back(Figure(h.*f.value));
      }
    }
  }
  json series = json::object();
  for (auto& [name, s] : out) {
    for (const char* k : keys) {
      while (s[k].size() < n) s[k].push_back(nullptr);
    }
    series[name] = std::move(s);
  }
  return series;
}

}  // namespace

void LiveHistory::Add(double t_s, std::vector<HostHealth> hosts,
                      std::vector<HostHealth> ranks, std::string stragglers,
                      int straggler) {
  // Kept as the page gets it (to the millisecond), so that the time it
  // sends back as ?since= is the sample's own.
  samples_.push_back({std::round(t_s * 1000) / 1000, std::move(hosts),
                      std::move(ranks), std::move(stragglers), straggler});
  while (samples_.size() > keep_) samples_.pop_front();
}

std::string LiveStateJson(const LiveJob& job, double run_s,
                          const LiveHistory& history, double since,
                          const LiveNews& news) {
  json hosts = json::array(), ranks = json::array(), t = json::array();
  json columns = json::array({"host", "rank"});
  for (const Field& f : kFields) columns.push_back(f.key);
  columns.push_back("bad");
  std::string stragglers;
  int straggler = -1;
  const auto& samples = history.samples();
  if (!samples.empty()) {
    const LiveHistory::Sample& last = samples.back();
    for (const HostHealth& h : last.hosts) hosts.push_back(Row(h));
    for (const HostHealth& h : last.ranks) ranks.push_back(Row(h));
    stragglers = last.stragglers;
    straggler = last.straggler;
  }
  size_t first = 0;
  while (first < samples.size() && samples[first].t_s <= since) ++first;
  for (size_t i = first; i < samples.size(); ++i) t.push_back(samples[i].t_s);
  json out = {{"run_s", std::round(run_s * 10) / 10},
              {"columns", columns},
              {"hosts", hosts},
              {"ranks", ranks},
              {"stragglers", stragglers},
              {"straggler", straggler},
              {"series",
               {{"t", t},
                {"hosts", Series(history, first, false, {"ar", "bus"})},
                {"ranks", Series(history, first, true, {"step", "bus"})}}}};
  if (!news.lines.empty()) {
    json lines = json::array();
    for (const auto& [n, line] : news.lines) lines.push_back({n, line});
    out["lines"] = std::move(lines);
  }
  if (news.members_changed) {
    json members = json::array();
    for (const rendezvous::Member& m : news.members) {
      members.push_back({m.rank, m.host, m.slot, m.generation,
                         m.exit_status ? json(*m.exit_status) : json(nullptr)});
    }
    out["members"] = std::move(members);
  }
  if (news.timeline) out["timeline"] = true;
  if (news.flight > 0) {
    out["flight"] = {{"n", news.flight}, {"lines", news.flight_lines}};
  }
  // The job's description once: a page that asks for what came since
  // has it already.
  if (since < 0) {
    out["job"] = {{"id", job.id},
                  {"command", job.command},
                  {"hosts", job.hosts},
                  {"size", job.size}};
  }
  return out.dump();
}

}  // namespace hvd::launcher
