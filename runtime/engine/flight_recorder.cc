#include "runtime/engine/flight_recorder.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/equal_bytes.h"
#include "runtime/dtype.h"

namespace hvd::runtime {

FlightRecorder::FlightRecorder(size_t capacity, int process_set)
    : process_set_(process_set),
      ring_(capacity),
      next_slot_(capacity > 0 ? 1 % capacity : 0) {}

namespace {

// The submitting thread's site (hvd::set_submission_site), and whether it
// has one: a plain flag is read without the string's thread-local guard
// (every call of the fast lane records an entry, most with no site).
thread_local std::string t_site;
thread_local bool t_has_site = false;

}  // namespace

void FlightRecorder::SetThreadSite(const std::string& site) {
  t_site = site;
  t_has_site = !site.empty();
}

FlightRecorder::Entry& FlightRecorder::NextLocked(const Request& r,
                                                  Clock::time_point at) {
  Entry& e = ring_[next_slot_];
  if (++next_slot_ == ring_.size()) next_slot_ = 0;
  e.seq = ++last_;
  // The slot's buffer is reused (no allocation), and a loop's tensor
  // finds its own name there often: then nothing is copied.
  if (e.name.size() != r.name.size() ||
      !EqualBytes(e.name.data(), r.name.data(), r.name.size())) {
    e.name.assign(r.name);
  }
  e.op = r.type;
  e.dtype = r.dtype;
  e.bytes = std::max<int64_t>(r.count, 0) *
            static_cast<int64_t>(DataTypeSize(r.dtype));
  e.device = r.device;
  e.submitted = at;
  e.negotiated = e.started = e.finished = Clock::time_point{};
  e.failed = false;
  // NextLocked runs on the submitting thread.
  if (t_has_site) {
    e.site.assign(t_site);
  } else if (!e.site.empty()) {
    e.site.clear();
  }
  return e;
}

uint64_t FlightRecorder::Submitted(const Request& r, Clock::time_point at) {
  if (ring_.empty()) return 0;
  std::lock_guard<SpinLock> lock(mu_);
  return NextLocked(r, at).seq;
}

uint64_t FlightRecorder::Completed(const Request& r, Clock::time_point start,
                                   Clock::time_point end) {
  if (ring_.empty()) return 0;
  std::lock_guard<SpinLock> lock(mu_);
  Entry& e = NextLocked(r, start);
  e.negotiated = e.started = start;
  e.finished = end;
  return e.seq;
}

void FlightRecorder::Mark(uint64_t seq, Phase phase, Clock::time_point at) {
  const uint64_t one[] = {seq};
  MarkEach(
      one, [](uint64_t s) { return s; }, phase, at);
}

void FlightRecorder::Finished(uint64_t seq, Clock::time_point at, bool ok) {
  const uint64_t one[] = {seq};
  FinishedEach(
      one, [](uint64_t s) { return s; }, at, ok);
}

void FlightRecorder::Ran(uint64_t seq, Clock::time_point start,
                         Clock::time_point end) {
  if (ring_.empty()) return;
  std::lock_guard<SpinLock> lock(mu_);
  if (Entry* e = FindLocked(seq)) {
    e->negotiated = e->started = start;
    e->finished = end;
  }
}

std::vector<FlightRecorder::Entry> FlightRecorder::Snapshot(size_t most) const {
  std::lock_guard<SpinLock> lock(mu_);
  std::vector<Entry> out;
  const uint64_t n = std::min<uint64_t>({last_, ring_.size(), most});
  out.reserve(n);
  for (uint64_t seq = last_ - n + 1; seq <= last_; ++seq) {
    out.push_back(ring_[seq % ring_.size()]);
  }
  return out;
}

namespace {

// Steady-clock stamps as wall-clock microseconds since the epoch, so that
// ranks on several hosts can be laid side by side: both clocks read once.
class WallClock {
 public:
  WallClock()
      : steady_now_(FlightRecorder::Clock::now()),
        wall_now_(std::chrono::system_clock::now()) {}
  int64_t Us(FlightRecorder::Clock::time_point t) const {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               (wall_now_ - (steady_now_ - t)).time_since_epoch())
        .count();
  }
  int64_t NowUs() const { return Us(steady_now_); }

 private:
  FlightRecorder::Clock::time_point steady_now_;
  std::chrono::system_clock::time_point wall_now_;
};

}  // namespace

std::string FlightRecorder::ToJson(int rank, const std::string& host,
                                   const std::string& stacks) const {
  const std::vector<Entry> entries = Snapshot();
  const WallClock clock;
  auto wall_us = [&](Clock::time_point t) -> nlohmann::json {
    if (t == Clock::time_point{}) return nullptr;
    return clock.Us(t);
  };
  nlohmann::json list = nlohmann::json::array();
  for (const Entry& e : entries) {
    list.push_back({{"seq", e.seq},
                    {"name", e.name},
                    {"op", OpMetricName(e.op)},
                    {"dtype", std::string(DataTypeName(e.dtype))},
                    {"bytes", e.bytes},
                    {"device", e.device},
                    {"submitted_us", wall_us(e.submitted)},
                    {"negotiated_us", wall_us(e.negotiated)},
                    {"started_us", wall_us(e.started)},
                    {"finished_us", wall_us(e.finished)},
                    {"failed", e.failed},
                    {"site", e.site.empty() ? nlohmann::json(nullptr)
                                            : nlohmann::json(e.site)}});
  }
  nlohmann::json dump = {{"rank", rank},
                         {"host", host},
                         {"process_set", process_set_},
                         {"dumped_us", clock.NowUs()},
                         {"entries", std::move(list)}};
  if (!stacks.empty()) dump["stacks"] = stacks;
  // Names come from users: bytes that are not UTF-8 are replaced, not
  // thrown about.
  return dump.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string FlightRecorder::Arrivals(size_t n) const {
  std::vector<Entry> entries = Snapshot(n);
  const WallClock clock;
  std::string out;
  out.reserve(entries.size() * 48);
  for (Entry& e : entries) {
    std::replace(e.name.begin(), e.name.end(), '\n', ' ');
    out += std::to_string(e.seq) + " " + std::to_string(clock.Us(e.submitted)) +
           " " + e.name + "\n";
  }
  return out;
}

}  // namespace hvd::runtime
