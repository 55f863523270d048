#include "launcher/flight_analysis.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/files.h"
#include "rendezvous/members.h"

namespace hvd::launcher {
namespace {

std::string Who(const FlightRank& r) {
  return rendezvous::RankOnHost(r.rank, r.host);
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

// Not finished, or failed (waited on until it failed).
bool Waiting(const FlightOp* op) {
  return op != nullptr && op->submitted_us && (!op->finished_us || op->failed);
}

// How long `r` waited on `op`: until its dump, or until it failed.
int64_t WaitedUs(const FlightRank& r, const FlightOp& op) {
  const int64_t end =
      op.failed && op.finished_us ? *op.finished_us : r.dumped_us;
  return end - *op.submitted_us;
}

// What `r` last finished, and how long before its dump.
std::string LastOp(const FlightRank& r) {
  for (auto it = r.ops.rbegin(); it != r.ops.rend(); ++it) {
    if (!it->finished_us || it->failed) continue;
    return it->op + " \"" + it->name + "\" (seq " + std::to_string(it->seq) +
           ") done " + Seconds(r.dumped_us - *it->finished_us) + " ago" +
           (it->site.empty() ? "" : ", submitted at " + it->site);
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
  if (r.no_record) return false;
  const FlightOp* own = Latest(r, name);
  if (own != nullptr && own->finished_us && !own->failed &&
      (own->seq == seq || *own->finished_us >= submitted_us)) {
    return true;
  }
  return r.dumped_us < submitted_us;
}

// How often a rank submitted its names since every rank's records reach
// back (their seqs agree until the ranks part): a rank that skipped a
// tensor and went on has submitted some name two rounds more than another;
// ranks that only submit in different orders stay within one.
struct Rounds {
  int spread = 0;  // most - least
  std::string most, least;
  int most_n = 0, least_n = 0;
};

std::map<int, Rounds> RoundsOf(const std::vector<FlightRank>& ranks) {
  uint64_t from = 0;
  for (const FlightRank& r : ranks) {
    if (!r.ops.empty()) from = std::max(from, r.ops.front().seq);
  }
  std::map<int, std::map<std::string, int>> counts;
  std::set<std::string> repeated;  // a name submitted once says nothing
  for (const FlightRank& r : ranks) {
    std::map<std::string, int>& c = counts[r.rank];
    for (const FlightOp& op : r.ops) {
      if (op.seq >= from && ++c[op.name] == 2) repeated.insert(op.name);
    }
  }
  std::map<int, Rounds> out;
  for (auto& [rank, c] : counts) {
    Rounds& rounds = out[rank];
    bool first = true;
    for (const std::string& name : repeated) {
      const int n = c[name];
      if (first || n > rounds.most_n) rounds.most = name, rounds.most_n = n;
      if (first || n < rounds.least_n) rounds.least = name, rounds.least_n = n;
      first = false;
    }
    rounds.spread = rounds.most_n - rounds.least_n;
  }
  return out;
}

// What a rank that waits elsewhere does instead of the tensor it is
// missing: it went on without it, or the ranks submit in different orders.
std::string Instead(const FlightRank& r, const Rounds& rounds) {
  const std::vector<const FlightOp*> own = WaitsOf(r);
  if (own.empty()) return "";
  std::string out = ", and it waits on \"" + own.front()->name + "\" instead";
  if (rounds.spread < 2) return out + " (the ranks submit in different orders)";
  return out + ": it went on without it (\"" + rounds.most + "\" submitted " +
         std::to_string(rounds.most_n) + " times, \"" + rounds.least + "\" " +
         std::to_string(rounds.least_n) + ")";
}

// A finding, and how far its absent rank's rounds are apart (the rank that
// went on is the one to name first).
struct Finding {
  int spread = 0;
  std::string line;
  // Its absent ranks wait on other tensors, without having gone on.
  bool crossed = false;
};

// One line for ranks that each wait for what another has not submitted:
// "the ranks submit in different orders: rank 0 (host a) waits on "x"
// (seq 8); rank 1 (host b) on "y" (seq 8); since 1.9 s".
std::string Crossed(const std::vector<FlightRank>& ranks) {
  std::map<std::string, std::pair<std::vector<const FlightRank*>, uint64_t>>
      by_name;
  int64_t since = 0;
  for (const FlightRank& r : ranks) {
    const std::vector<const FlightOp*> own = WaitsOf(r);
    if (own.empty()) continue;
    auto& [who, seq] = by_name[own.front()->name];
    who.push_back(&r);
    seq = own.front()->seq;
    since = std::max(since, WaitedUs(r, *own.front()));
  }
  // In the order of each name's first rank.
  std::vector<std::pair<int, std::string>> names;
  for (const auto& [name, entry] : by_name) {
    names.push_back({entry.first.front()->rank, name});
  }
  std::sort(names.begin(), names.end());
  std::string out = "the ranks submit in different orders: ";
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& [who, seq] = by_name[names[i].second];
    std::vector<int> numbers;
    for (const FlightRank* r : who) numbers.push_back(r->rank);
    out += (i == 0 ? "" : "; ") +
           (who.size() == 1 ? Who(*who.front()) : Ranks(numbers)) +
           (i == 0 ? (who.size() == 1 ? " waits on \"" : " wait on \"")
                   : " on \"") +
           names[i].second + "\" (seq " + std::to_string(seq) + ")";
  }
  return out + "; since " + Seconds(since);
}

// The finding for a tensor some ranks wait on and others never submitted;
// empty when nobody is absent, and when every absent rank is excused or
// the wait is short (then `*moving` is set).
Finding Missing(const std::vector<FlightRank>& ranks, const std::string& name,
                const std::map<int, Rounds>& rounds, bool* moving) {
  std::vector<int> waiting;
  std::vector<const FlightRank*> absent;
  int64_t since = 0;
  uint64_t seq = 0;
  int64_t first_submitted = INT64_MAX;
  bool all_failed = true;
  for (const FlightRank& r : ranks) {
    const FlightOp* op = Latest(r, name);
    if (Waiting(op)) {
      waiting.push_back(r.rank);
      const int64_t waited = WaitedUs(r, *op);
      if (waited > since) since = waited, seq = op->seq;
      first_submitted = std::min(first_submitted, *op->submitted_us);
      all_failed = all_failed && op->failed;
    } else {
      absent.push_back(&r);
    }
  }
  if (waiting.empty() || absent.empty()) return {};
  const bool all_excused =
      std::all_of(absent.begin(), absent.end(), [&](const FlightRank* r) {
        return Excused(*r, name, seq, first_submitted);
      });
  const bool any_unknown =
      std::any_of(absent.begin(), absent.end(),
                  [](const FlightRank* r) { return r->no_record.has_value(); });
  if (all_excused || (since < kStuckUs && !any_unknown)) {
    *moving = true;
    return {};
  }
  Finding f;
  std::string& out = f.line;
  // "rank 0 waits there since 3.1 s" / "ranks 0-2 waited there 0.4 s
  // until it failed".
  const std::string waited =
      all_failed ? " waited there " + Seconds(since) + " until it failed"
                 : std::string(waiting.size() == 1 ? " waits" : " wait") +
                       " there since " + Seconds(since);
  if (std::all_of(absent.begin(), absent.end(), [](const FlightRank* r) {
        return r->no_record.has_value();
      })) {
    out = Ranks(waiting) +
          (all_failed            ? " waited on \""
           : waiting.size() == 1 ? " waits on \""
                                 : " wait on \"") +
          name + "\" (seq " + std::to_string(seq) + ")" +
          (all_failed ? " " + Seconds(since) + " until it failed"
                      : " since " + Seconds(since));
    for (const FlightRank* r : absent) {
      out += "; " + Who(*r) + " left no record (" + *r->no_record + ")";
    }
    return f;
  }
  for (const FlightRank* r : absent) {
    out += (out.empty() ? "" : "; ") + Who(*r) +
           (r->no_record ? " left no record (" + *r->no_record + ")"
                         : " never submitted \"" + name + "\"");
  }
  out += " (seq " + std::to_string(seq) + " on the others); " + Ranks(waiting) +
         waited;
  for (const FlightRank* r : absent) {
    if (r->no_record) continue;
    const Rounds& own = rounds.at(r->rank);
    f.spread = std::max(f.spread, own.spread);
    f.crossed = f.crossed || (own.spread < 2 && !WaitsOf(*r).empty());
    out += "; rank " + std::to_string(r->rank) + "'s last op: " + LastOp(*r) +
           Instead(*r, own);
    const std::string in = InnermostFrame(r->stacks);
    if (!in.empty()) {
      out += "; rank " + std::to_string(r->rank) + " is in " + in;
    }
  }
  return f;
}

}  // namespace

std::string InnermostFrame(const std::string& stacks) {
  // Blocks "Thread 0x... (most recent call first):" (or "Current thread
  // ..."), each followed by lines '  File "PATH", line N in FUNC'.
  const size_t block = stacks.rfind("hread 0x");
  if (block == std::string::npos) return "";
  const size_t file = stacks.find("File \"", block);
  if (file == std::string::npos) return "";
  const size_t path_end = stacks.find('"', file + 6);
  const size_t line_at = stacks.find(", line ", path_end);
  const size_t in_at = stacks.find(" in ", line_at);
  const size_t eol = stacks.find('\n', file);
  if (path_end == std::string::npos || line_at == std::string::npos ||
      in_at == std::string::npos || in_at > eol) {
    return "";
  }
  std::string path = stacks.substr(file + 6, path_end - file - 6);
  path = path.substr(path.rfind('/') + 1);
  return path + ":" + stacks.substr(line_at + 7, in_at - line_at - 7) + " in " +
         stacks.substr(
             in_at + 4,
             (eol == std::string::npos ? stacks.size() : eol) - in_at - 4);
}

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
    if (d.contains("stacks") && d.at("stacks").is_string()) {
      r.stacks = d.at("stacks").get<std::string>();
    }
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
      if (e.contains("site") && e.at("site").is_string()) {
        op.site = e.at("site").get<std::string>();
      }
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
      w = std::max(w, WaitedUs(r, *op));
    }
  }
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [name, w] : waited) order.push_back({-w, name});
  std::sort(order.begin(), order.end());
  bool moving = false;
  const std::map<int, Rounds> rounds = RoundsOf(ranks);
  std::vector<Finding> found;
  int most_spread = 0;
  for (const auto& [w, name] : order) {
    Finding f{0, Disagreement(ranks, name)};
    if (f.line.empty()) f = Missing(ranks, name, rounds, &moving);
    if (f.line.empty()) continue;
    most_spread = std::max(most_spread, f.spread);
    found.push_back(std::move(f));
  }
  // The rank that went on without a tensor first; what the others "never
  // submitted" then is only where it went on to.
  std::stable_sort(
      found.begin(), found.end(),
      [](const Finding& a, const Finding& b) { return a.spread > b.spread; });
  size_t kept = 0, crossed = 0;
  for (Finding& f : found) {
    if (kept == 5 || f.spread + 2 <= most_spread) break;
    ++kept;
    crossed += f.crossed;
  }
  // Ranks that wait for each other's tensors: who "never submitted" what
  // is only which side one looks from.
  if (kept >= 2 && crossed == kept) return {Crossed(ranks)};
  for (size_t i = 0; i < kept; ++i) lines.push_back(std::move(found[i].line));
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
