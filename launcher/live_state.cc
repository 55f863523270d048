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

// Each host's figures as series over the samples, aligned with "t".
json Series(const LiveHistory& history) {
  json t = json::array();
  std::map<std::string, json> hosts;
  const auto& samples = history.samples();
  for (size_t i = 0; i < samples.size(); ++i) {
    t.push_back(samples[i].t_s);
    for (const HostHealth& h : samples[i].hosts) {
      json& s = hosts[h.host];
      if (s.is_null()) {
        for (const char* k : {"step_s", "allreduce_share", "bus_bytes_per_s",
                              "cpu_share", "memory_share"}) {
          // Earlier samples did not have this host.
          s[k] = json::array();
          for (size_t j = 0; j < i; ++j) s[k].push_back(nullptr);
        }
      }
      s["step_s"].push_back(Figure(h.step_s));
      s["allreduce_share"].push_back(Figure(h.allreduce_share));
      s["bus_bytes_per_s"].push_back(Figure(h.bus_bytes_per_s));
      s["cpu_share"].push_back(Figure(h.cpu_share));
      s["memory_share"].push_back(Figure(h.memory_share));
    }
    // A host missing from this sample (it left) gets a gap.
    for (auto& [name, s] : hosts) {
      while (s["step_s"].size() < t.size()) {
        for (auto& [k, v] : s.items()) v.push_back(nullptr);
      }
    }
  }
  json out = {{"t", t}, {"hosts", json::object()}};
  for (auto& [name, s] : hosts) out["hosts"][name] = std::move(s);
  return out;
}

}  // namespace

void LiveHistory::Add(double t_s, std::vector<HostHealth> hosts,
                      std::string stragglers) {
  samples_.push_back({t_s, std::move(hosts), std::move(stragglers)});
  while (samples_.size() > keep_) samples_.pop_front();
}

std::string LiveStateJson(const LiveJob& job, double run_s,
                          const LiveHistory& history) {
  json now = json::array();
  std::string stragglers;
  if (!history.samples().empty()) {
    for (const HostHealth& h : history.samples().back().hosts) {
      now.push_back(HostRow(h));
    }
    stragglers = history.samples().back().stragglers;
  }
  json out = {{"job",
               {{"id", job.id},
                {"command", job.command},
                {"hosts", job.hosts},
                {"size", job.size},
                {"run_s", run_s}}},
              {"now", now},
              {"stragglers", stragglers},
              {"series", Series(history)}};
  return out.dump();
}

}  // namespace hvd::launcher
