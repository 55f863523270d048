// Who arrives last at the job's collectives, while it runs (issue: hung or
// slow jobs). Every rank publishes its recent submissions with its metrics
// (rendezvous::kArrivalsKeyPrefix: "RANK HOST", then "SEQ SUBMITTED_US
// NAME" lines); each collective that every rank has submitted (the same
// name at the same sequence number) is counted once: the spread between
// its first and last submission, which rank was last, and how far behind
// the median that rank was. Ranks that submit in different orders give
// no match and are not counted. Times are wall clocks: across hosts they
// are as close as the hosts' clocks are. Pure; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace hvd::launcher {

class Stragglers {
 public:
  explicit Stragglers(int size) : size_(size) {}

  // Reads every rank's latest report (in any order, any may be missing)
  // and counts the collectives every rank has submitted since.
  void Update(const std::vector<std::string>& reports);

  uint64_t counted() const { return counted_; }

  // hvd_collective_arrival_spread_seconds (a histogram) and
  // hvd_rank_last_arrivals_total{rank,host} samples, labelled with `job`.
  std::string Samples(const std::string& job) const;

  // "rank 1 (host b) arrived last in 92 % of 1234 collectives, 180.0 ms
  // behind the median" for the rank last most often, when it stands out
  // (last in at least 20 collectives, and in at least 3/4 of them, or
  // twice its fair share when there are more than 8/3 ranks); else "".
  std::string Line() const;
  // The rank Line names, or -1 when none stands out.
  int Straggler() const;

 private:
  struct Collective {
    std::string name;
    std::map<int, int64_t> at;  // rank -> submitted, us
  };
  struct Rank {
    std::string host;
    uint64_t last = 0;
    double behind_s = 0;  // summed over the collectives it was last in
  };
  void Count(const Collective& c);

  const int size_;
  std::map<uint64_t, Collective> pending_;  // seen on some ranks only
  std::set<uint64_t> done_;                 // counted (or found unmatched)
  std::map<int, Rank> ranks_;
  std::vector<uint64_t> spread_counts_;  // per LatencyBuckets() (+1)
  double spread_sum_ = 0;
  uint64_t counted_ = 0;
};

}  // namespace hvd::launcher
