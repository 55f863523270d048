#include "launcher/flight_analysis.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/files.h"

namespace hvd::launcher {
namespace {

// "rank 3 (host b)".
std::string Who(const FlightRank& r) {
  return "rank " + std::to_string(r.rank) + " (host " + r.host + ")";
}

// "ranks 0-2, 5" / "rank 4".
std::string Ranks(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(ranks[i]) +
           (j > i ? "-" + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return (ranks.size() == 1 ? "rank " : "ranks ") + out;
}

std::string Seconds(int64_t us) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", static_cast<double>(us) / 1e6);
  return buf;
}

// The latest entry of `name` on `r`, or null.
const FlightOp* Latest(const FlightRank& r, const std::string& name) {
  for (auto it = r.ops.rbegin(); it != r.ops.rend(); ++it) {
    if (it->name == name) return &*it;
  }
  return nullptr;
}

bool Waiting(const FlightOp* op) {
  return op != nullptr && !op->finished_us && op->submitted_us;
}

// What `r` last finished, and how long before its dump.
std::string LastOp(const FlightRank& r) {
  for (auto it = r.ops.rbegin(); it != r.ops.rend(); ++it) {
    if (!it->finished_us) continue;
    return it->op + " \"" + it->name + "\" (seq " + std::to_string(it->seq) +
           ") done " + Seconds(r.dumped_us - *it->finished_us) + " ago";
  }
  return "none yet";
}

// The names `r` waits on, oldest first.
std::vector<const FlightOp*> WaitsOf(const FlightRank& r) {
  std::vector<const FlightOp*> out;
  for (const FlightOp& op : r.ops) {
    if (Waiting(&op) && Latest(r, op.name) == &op) out.push_back(&op);
  }
  return out;
}

// Ranks waiting on `name` with different sizes or ops: one line, or "".
std::string Disagreement(const std::vector<FlightRank>& ranks,
                         const std::string& name) {
  std::map<std::pair<std::string, int64_t>, std::vector<int>> kinds;
  for (const FlightRank& r : ranks) {
    const FlightOp* op = Latest(r, name);
    if (Waiting(op)) kinds[{op->op, op->bytes}].push_back(r.rank);
  }
  if (kinds.size() < 2) return "";
  // In the order of each kind's first rank.
  std::vector<std::pair<std::vector<int>, std::pair<std::string, int64_t>>>
      by_rank;
  for (auto& [kind, who] : kinds) by_rank.push_back({who, kind});
  std::sort(by_rank.begin(), by_rank.end());
  std::string out = "the ranks disagree on \"" + name + "\":";
  for (const auto& [who, kind] : by_rank) {
    out += " " + Ranks(who) + " submitted " + kind.first + " of " +
           std::to_string(kind.second) + " bytes;";
  }
  out.pop_back();
  return out;
}

// A wait shorter than this is a job that moves: the others are on their
// way (computing the next gradient), not staying away.
constexpr int64_t kStuckUs = 1'000'000;

// Whether `r`, not waiting on a tensor others submitted at `submitted_us`
// (the earliest of them) as seq `seq`, says nothing against itself: it
// finished that round (so the waiters were dumped before it completed),
// or it was dumped before the others submitted it (it may not have got
// there yet). Dumps of a job that moves are taken moments apart.
bool Excused(const FlightRank& r, const std::string& name, uint64_t seq,
             int64_t submitted_us) {
  const FlightOp* own = Latest(r, name);
  if (own != nullptr && own->finished_us &&
      (own->seq == seq || *own->finished_us >= submitted_us)) {
    return true;
  }
  return r.dumped_us < submitted_us;
}

// The line for a tensor some ranks wait on and others never submitted;
// "" when nobody is absent, and when every absent rank is excused or the
// wait is short (then `*moving` is set).
std::string Missing(const std::vector<FlightRank>& ranks,
                    const std::string& name, bool* moving) {
  std::vector<int> waiting;
  std::vector<const FlightRank*> absent;
  int64_t since = 0;
  uint64_t seq = 0;
  int64_t first_submitted = INT64_MAX;
  for (const FlightRank& r : ranks) {
    const FlightOp* op = Latest(r, name);
    if (Waiting(op)) {
      waiting.push_back(r.rank);
      const int64_t waited = r.dumped_us - *op->submitted_us;
      if (waited > since) since = waited, seq = op->seq;
      first_submitted = std::min(first_submitted, *op->submitted_us);
    } else {
      absent.push_back(&r);
    }
  }
  if (waiting.empty() || absent.empty()) return "";
  const bool all_excused =
      std::all_of(absent.begin(), absent.end(), [&](const FlightRank* r) {
        return Excused(*r, name, seq, first_submitted);
      });
  if (all_excused || since < kStuckUs) {
    *moving = true;
    return "";
  }
  std::string out;
  for (const FlightRank* r : absent) {
    out += (out.empty() ? "" : "; ") + Who(*r) + " never submitted \"" + name +
           "\"";
  }
  out += " (seq " + std::to_string(seq) + " on the others); " + Ranks(waiting) +
         (waiting.size() == 1 ? " waits" : " wait") + " there since " +
         Seconds(since);
  for (const FlightRank* r : absent) {
    const std::vector<const FlightOp*> own = WaitsOf(*r);
    out += "; rank " + std::to_string(r->rank) + "'s last op: " + LastOp(*r);
    if (!own.empty()) {
      out += ", and it waits on \"" + own.front()->name +
             "\" instead (the ranks submit in different orders)";
    }
  }
  return out;
}

}  // namespace

StatusOr<FlightRank> ParseFlightDump(const std::string& json) {
  nlohmann::json d = nlohmann::json::parse(json, nullptr, false);
  if (d.is_discarded() || !d.is_object() || !d.contains("entries") ||
      !d.contains("rank")) {
    return Status::InvalidArgument("flight recorder dump",
                                   "is not a JSON object with rank and "
                                   "entries");
  }
  try {
    FlightRank r;
    r.rank = d.at("rank").get<int>();
    r.host = d.value("host", std::string("?"));
    r.dumped_us = d.value("dumped_us", int64_t{0});
    auto stamp = [](const nlohmann::json& e, const char* key) {
      return e.contains(key) && !e.at(key).is_null()
                 ? std::optional<int64_t>(e.at(key).get<int64_t>())
                 : std::nullopt;
    };
    for (const nlohmann::json& e : d.at("entries")) {
      FlightOp op;
      op.seq = e.at("seq").get<uint64_t>();
      op.name = e.at("name").get<std::string>();
      op.op = e.at("op").get<std::string>();
      op.bytes = e.at("bytes").get<int64_t>();
      op.submitted_us = stamp(e, "submitted_us");
      op.finished_us = stamp(e, "finished_us");
      op.failed = e.value("failed", false);
      r.ops.push_back(std::move(op));
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument("flight recorder dump", e.what());
  }
}

std::vector<std::string> AnalyzeFlight(const std::vector<FlightRank>& ranks) {
  std::vector<std::string> lines;
  // The names waited on, by how long (the longest first).
  std::map<std::string, int64_t> waited;
  for (const FlightRank& r : ranks) {
    for (const FlightOp* op : WaitsOf(r)) {
      int64_t& w = waited[op->name];
      w = std::max(w, r.dumped_us - *op->submitted_us);
    }
  }
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [name, w] : waited) order.push_back({-w, name});
  std::sort(order.begin(), order.end());
  bool moving = false;
  for (const auto& [w, name] : order) {
    if (lines.size() == 5) break;
    std::string line = Disagreement(ranks, name);
    if (line.empty()) line = Missing(ranks, name, &moving);
    if (!line.empty()) lines.push_back(std::move(line));
  }
  if (!lines.empty()) return lines;
  if (moving) {
    return {
        "the job was moving when its ranks were dumped: each wait is on "
        "a collective the other ranks had finished, or had not reached "
        "when they were dumped; no rank stayed away"};
  }
  if (!order.empty()) {
    return {"every rank waits on the same collectives (" +
            std::to_string(order.size()) +
            " in flight): a peer or the network is slow, not a rank that "
            "stayed away"};
  }
  // Nothing in flight: the rank that finished its last op longest ago.
  const FlightRank* oldest = nullptr;
  int64_t age = -1;
  for (const FlightRank& r : ranks) {
    for (auto it = r.ops.rbegin(); it != r.ops.rend(); ++it) {
      if (!it->finished_us) continue;
      if (r.dumped_us - *it->finished_us > age) {
        age = r.dumped_us - *it->finished_us;
        oldest = &r;
      }
      break;
    }
  }
  if (oldest == nullptr) return {"no rank has run a collective yet"};
  return {"no collective is in flight on any rank; " + Who(*oldest) +
          " ran its last the longest ago: " + LastOp(*oldest)};
}

StatusOr<std::vector<std::string>> AnalyzeFlightDir(const std::string& dir) {
  std::vector<FlightRank> ranks;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("rank.", 0) != 0 || entry.path().extension() != ".json") {
      continue;
    }
    HVD_ASSIGN_OR_RETURN(std::string text,
                         ReadWholeFile(entry.path().string()));
    auto r = ParseFlightDump(text);
    if (!r.ok()) return r.status().WithContext(entry.path().string());
    ranks.push_back(std::move(*r));
  }
  if (ec) {
    return Status::InvalidArgument(
        dir, "cannot read the directory: " + ec.message());
  }
  if (ranks.empty()) {
    return Status::InvalidArgument(
        dir, "holds no rank.N.json dumps (horovodrun writes them on SIGUSR1)");
  }
  std::sort(
      ranks.begin(), ranks.end(),
      [](const FlightRank& a, const FlightRank& b) { return a.rank < b.rank; });
  return AnalyzeFlight(ranks);
}

}  // namespace hvd::launcher
