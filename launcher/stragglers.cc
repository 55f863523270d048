#include "launcher/stragglers.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "common/metrics_format.h"

namespace hvd::launcher {
namespace {

struct Report {
  int rank = -1;
  std::string host;
  // seq -> (submitted us, name)
  std::map<uint64_t, std::pair<int64_t, std::string>> ops;
};

// "RANK HOST" then "SEQ US NAME" lines; a malformed line ends the report.
Report Parse(const std::string& text) {
  Report r;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) return r;
  std::istringstream head(line);
  if (!(head >> r.rank >> r.host)) r.rank = -1;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    uint64_t seq;
    int64_t us;
    if (!(l >> seq >> us)) break;
    std::string name;
    std::getline(l >> std::ws, name);
    r.ops[seq] = {us, std::move(name)};
  }
  return r;
}

}  // namespace

void Stragglers::Update(const std::vector<std::string>& reports) {
  uint64_t oldest_seen = UINT64_MAX;  // the earliest seq any report still has
  for (const std::string& text : reports) {
    Report r = Parse(text);
    if (r.rank < 0 || r.rank >= size_) continue;
    ranks_[r.rank].host = r.host;
    if (!r.ops.empty())
      oldest_seen = std::min(oldest_seen, r.ops.begin()->first);
    for (auto& [seq, op] : r.ops) {
      if (done_.count(seq)) continue;
      Collective& c = pending_[seq];
      if (c.at.empty()) c.name = op.second;
      if (c.name != op.second) {  // different orders: not one collective
        pending_.erase(seq);
        done_.insert(seq);
        continue;
      }
      c.at[r.rank] = op.first;
    }
  }
  if (oldest_seen == UINT64_MAX) return;  // nothing read: nothing learnt
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (static_cast<int>(it->second.at.size()) == size_) {
      Count(it->second);
      done_.insert(it->first);
      it = pending_.erase(it);
    } else if (it->first < oldest_seen) {
      it = pending_.erase(it);  // out of every window: never complete
    } else {
      ++it;
    }
  }
  // What no report holds any more cannot come again.
  done_.erase(done_.begin(), done_.lower_bound(oldest_seen));
}

void Stragglers::Count(const Collective& c) {
  std::vector<int64_t> times;
  int last = -1;
  int64_t last_at = INT64_MIN;
  for (const auto& [rank, at] : c.at) {
    times.push_back(at);
    if (at > last_at) last_at = at, last = rank;
  }
  std::sort(times.begin(), times.end());
  const double spread = static_cast<double>(times.back() - times.front()) / 1e6;
  // The median of an even count: the upper middle (the last is ahead of
  // nobody, so two ranks give it 0 behind itself otherwise).
  const int64_t median = times[(times.size() - 1) / 2];
  spread_counts_.resize(metrics::kLatencyBucketCount + 1);
  ++spread_counts_[metrics::LatencyBucket(spread)];
  spread_sum_ += spread;
  Rank& r = ranks_[last];
  ++r.last;
  r.behind_s += static_cast<double>(last_at - median) / 1e6;
  ++counted_;
}

std::string Stragglers::Samples(const std::string& job) const {
  std::string out;
  if (counted_ > 0) {
    out += metrics::HistogramSamples("hvd_collective_arrival_spread_seconds",
                                     {{"job", job}}, metrics::LatencyBuckets(),
                                     spread_counts_, spread_sum_);
  }
  for (const auto& [rank, r] : ranks_) {
    out += metrics::Sample(
        "hvd_rank_last_arrivals_total",
        {{"rank", std::to_string(rank)}, {"host", r.host}, {"job", job}},
        static_cast<double>(r.last));
  }
  return out;
}

int Stragglers::Straggler() const {
  const Rank* most = nullptr;
  int who = -1;
  for (const auto& [rank, r] : ranks_) {
    if (most == nullptr || r.last > most->last) most = &r, who = rank;
  }
  if (most == nullptr || most->last < 20 || counted_ == 0) return -1;
  const double share = static_cast<double>(most->last) / counted_;
  if (share < std::min(0.75, 2.0 / size_)) return -1;
  return who;
}

std::string Stragglers::Line() const {
  const int who = Straggler();
  if (who < 0) return "";
  const Rank& r = ranks_.at(who);
  const double share = static_cast<double>(r.last) / counted_;
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "rank %d (host %s) arrived last in %.0f %% of %llu "
                "collectives, %.1f ms behind the median",
                who, r.host.c_str(), share * 100,
                static_cast<unsigned long long>(counted_),
                r.behind_s / static_cast<double>(r.last) * 1e3);
  return buf;
}

}  // namespace hvd::launcher
