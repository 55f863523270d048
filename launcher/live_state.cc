#include "launcher/live_state.h"

#include <map>
#include <nlohmann/json.hpp>

namespace hvd::launcher {
namespace {

using nlohmann::json;

// A figure, or null where it is absent (negative).
json Figure(double v) { return v < 0 ? json(nullptr) : json(v); }

json HostRow(const HostHealth& h) {
  const HealthMarks m = Marks(h);
  return {{"host", h.host},
          {"rank", h.rank},
          {"step_s", Figure(h.step_s)},
          {"allreduce_share", Figure(h.allreduce_share)},
          {"bus_bytes_per_s", Figure(h.bus_bytes_per_s)},
          {"cpu_share", Figure(h.cpu_share)},
          {"memory_share", Figure(h.memory_share)},
          {"gpu_share", Figure(h.gpu_share)},
          {"gpu_memory_share", Figure(h.gpu_memory_share)},
          {"marks",
           {{"allreduce_share", m.allreduce},
            {"cpu_share", m.cpu},
            {"memory_share", m.memory},
            {"gpu_share", m.gpu},
            {"gpu_memory_share", m.gpu_memory}}}};
}

// Each host's (or rank's) figures as series over the samples, aligned
// with the samples' times: null where a sample lacks it.
json Series(const LiveHistory& history, bool ranks) {
  static const char* const kFields[] = {"step_s", "allreduce_share",
                                        "bus_bytes_per_s", "cpu_share",
                                        "memory_share"};
  std::map<std::string, json> out;
  const auto& samples = history.samples();
  for (size_t i = 0; i < samples.size(); ++i) {
    for (const HostHealth& h : ranks ? samples[i].ranks : samples[i].hosts) {
      json& s = out[ranks ? std::to_string(h.rank) : h.host];
      if (s.is_null()) {
        for (const char* k : kFields) s[k] = json::array();
      }
      // Samples before this one that did not have it.
      while (s["step_s"].size() < i) {
        for (const char* k : kFields) s[k].push_back(nullptr);
      }
      s["step_s"].push_back(Figure(h.step_s));
      s["allreduce_share"].push_back(Figure(h.allreduce_share));
      s["bus_bytes_per_s"].push_back(Figure(h.bus_bytes_per_s));
      s["cpu_share"].push_back(Figure(h.cpu_share));
      s["memory_share"].push_back(Figure(h.memory_share));
    }
  }
  json series = json::object();
  for (auto& [name, s] : out) {
    while (s["step_s"].size() < samples.size()) {
      for (const char* k : kFields) s[k].push_back(nullptr);
    }
    series[name] = std::move(s);
  }
  return series;
}

}  // namespace

void LiveHistory::Add(double t_s, std::vector<HostHealth> hosts,
                      std::vector<HostHealth> ranks, std::string stragglers,
                      int straggler) {
  samples_.push_back({t_s, std::move(hosts), std::move(ranks),
                      std::move(stragglers), straggler});
  while (samples_.size() > keep_) samples_.pop_front();
}

std::string LiveStateJson(const LiveJob& job, double run_s,
                          const LiveHistory& history) {
  json now = json::array(), ranks = json::array(), t = json::array();
  std::string stragglers;
  if (!history.samples().empty()) {
    const LiveHistory::Sample& last = history.samples().back();
    for (const HostHealth& h : last.hosts) now.push_back(HostRow(h));
    for (const HostHealth& h : last.ranks) {
      json row = HostRow(h);
      row["straggler"] = h.rank == last.straggler;
      ranks.push_back(std::move(row));
    }
    stragglers = last.stragglers;
  }
  for (const LiveHistory::Sample& s : history.samples()) t.push_back(s.t_s);
  json out = {{"job",
               {{"id", job.id},
                {"command", job.command},
                {"hosts", job.hosts},
                {"size", job.size},
                {"run_s", run_s}}},
              {"now", now},
              {"ranks", ranks},
              {"stragglers", stragglers},
              {"series",
               {{"t", t},
                {"hosts", Series(history, false)},
                {"ranks", Series(history, true)}}}};
  return out.dump();
}

}  // namespace hvd::launcher
