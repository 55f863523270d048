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
#include "rendezvous/members.h"

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

// The state the page polls: {"run_s", "columns": ["host", "rank", "step"
// (s), "ar" (allreduce share of a step), "bus" (bytes/s), "cpu", "mem",
// "gpu", "gmem" (shares), "bad"], "hosts": [rows], "ranks": [rows],
// "stragglers": line, "straggler": its rank (-1), "series": {"t": [...],
// "hosts": {HOST: {"ar": [...], "bus": [...]}}, "ranks": {RANK: {"step":
// [...], "bus": [...]}}}}, and for a first poll "job": {id, command,
// hosts, size}; "lines": [[N, line]] and "members": [[rank, host, slot,
// generation, exit status or null]], "flight": {"n", "lines"} and
// "timeline": true when LiveNews has them. A row is an
// array in the columns' order: a host's has a
// null rank, an absent figure is null, and "bad" has bit i set for
// column i outside its healthy range. The series hold the samples after
// `since` (seconds into the job; all for a negative one), so a page that
// keeps what it has asks for the new ones only: at 16 ranks on 16 hosts a
// poll is under 5 KB, 300 KB a minute. Figures have 4 significant
// digits; a series lacks a sample as null.
// What else a poll carries, when there is something new: the launcher's
// lines said since the page's last (numbered, say.h), and the job's
// members (rank, host, slot, the generation each last joined, its exit
// status once it exited) when they changed since `since`.
struct LiveNews {
  std::vector<std::pair<uint64_t, std::string>> lines;
  bool members_changed = false;
  std::vector<rendezvous::Member> members;
  // The newest flight recorder dump's report (flight_dump.h), when the
  // page has not seen it: its number (0: none) and lines.
  uint64_t flight = 0;
  std::vector<std::string> flight_lines;
  // Rank 0's HOROVOD_TIMELINE file can be read here (/timeline.json).
  bool timeline = false;
};

std::string LiveStateJson(const LiveJob& job, double run_s,
                          const LiveHistory& history, double since = -1,
                          const LiveNews& news = {});

}  // namespace hvd::launcher
