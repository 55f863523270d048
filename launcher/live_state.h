// What the live page of --metrics-port shows (live_page.h), as the JSON it
// polls once a second at /api/state: the job, each host's health now with
// the values out of their healthy range marked (health.h), the same
// figures over the job's life, and the stragglers. Pure: JobWatch feeds it
// a sample a second.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "launcher/health.h"

namespace hvd::launcher {

struct LiveJob {
  std::string id;
  std::vector<std::string> command;
  // "host:slots", as horovodrun was given them.
  std::vector<std::string> hosts;
  int size = 0;
};

// The samples over the job's life: the newest `keep`, a sample a second
// (an hour by default), older ones dropped.
class LiveHistory {
 public:
  explicit LiveHistory(size_t keep = 3600) : keep_(keep) {}
  // The hosts' and the ranks' figures over the second that ended `t_s`
  // seconds into the job, the stragglers line then ("" for none) and the
  // rank it names (-1).
  void Add(double t_s, std::vector<HostHealth> hosts,
           std::vector<HostHealth> ranks = {}, std::string stragglers = "",
           int straggler = -1);
  size_t size() const { return samples_.size(); }

  struct Sample {
    double t_s;
    std::vector<HostHealth> hosts, ranks;
    std::string stragglers;
    int straggler;
  };
  const std::deque<Sample>& samples() const { return samples_; }

 private:
  size_t keep_;
  std::deque<Sample> samples_;
};

// {"job": {...,"run_s"}, "now": [host rows with "marks"], "ranks": [rank
//  rows, the straggler's with "straggler": true], "stragglers",
//  "series": {"t": [...], "hosts": {HOST: {"step_s": [...], ...}},
//  "ranks": {RANK: {...}}}}; a figure absent in a sample is null in its
// series.
std::string LiveStateJson(const LiveJob& job, double run_s,
                          const LiveHistory& history);

}  // namespace hvd::launcher
