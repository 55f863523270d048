#include "rendezvous/members.h"

#include "common/parse.h"

namespace hvd::rendezvous {
namespace {

// Why `m` may hold up a member in `generation`; empty when it does not.
std::string Holdup(const Member& m, int generation) {
  const std::string who = RankOnHost(m.rank, m.host);
  if (m.exit_status) {
    return who + " exited with status " + std::to_string(*m.exit_status) +
           (m.generation > 0
                ? " after generation " + std::to_string(m.generation)
                : " before joining");
  }
  if (m.generation == 0) return who + " has not joined";
  if (m.generation < generation) {
    return who + " is still in generation " + std::to_string(m.generation);
  }
  if (m.generation > generation) {
    return who + " has moved on to generation " + std::to_string(m.generation);
  }
  return "";
}

}  // namespace

std::string RankOnHost(int rank, const std::string& host) {
  return "rank " + std::to_string(rank) + " (host " + host + ")";
}

std::string ExitKey(const std::string& host, int slot) {
  return std::string(kExitKeyPrefix) + host + "/" + std::to_string(slot);
}

std::string FormatMembers(const std::vector<Member>& members) {
  std::string out;
  for (const Member& m : members) {
    out += std::to_string(m.rank) + " " + std::to_string(m.slot) + " " +
           std::to_string(m.generation) + " " +
           (m.exit_status ? std::to_string(*m.exit_status) : "-") + " " +
           m.host + "\n";
  }
  return out;
}

StatusOr<std::vector<Member>> ParseMembers(std::string_view text) {
  std::vector<Member> members;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? "" : text.substr(end + 1);
    const Status bad = Status::InvalidArgument(
        kMembersKey, "line '" + std::string(line) +
                         "' is not RANK SLOT GENERATION EXIT HOST");
    std::vector<std::string_view> fields;
    for (int i = 0; i < 4; ++i) {
      const size_t space = line.find(' ');
      if (space == std::string_view::npos) return bad;
      fields.push_back(line.substr(0, space));
      line = line.substr(space + 1);
    }
    if (line.empty()) return bad;
    Member m;
    m.host = std::string(line);
    auto rank = ParseInt64(fields[0], "rank", 0, INT32_MAX);
    auto slot = ParseInt64(fields[1], "slot", 0, INT32_MAX);
    auto gen = ParseInt64(fields[2], "generation", 0, INT32_MAX);
    if (!rank.ok() || !slot.ok() || !gen.ok()) return bad;
    m.rank = static_cast<int>(*rank);
    m.slot = static_cast<int>(*slot);
    m.generation = static_cast<int>(*gen);
    if (fields[3] != "-") {
      auto code = ParseInt64(fields[3], "exit", 0, 255);
      if (!code.ok()) return bad;
      m.exit_status = static_cast<int>(*code);
    }
    members.push_back(std::move(m));
  }
  return members;
}

std::string DescribeMembersFor(const std::vector<Member>& members, int waiter,
                               int generation, size_t limit) {
  std::string out;
  size_t count = 0;
  for (const Member& m : members) {
    if (m.rank == waiter) continue;
    std::string why = Holdup(m, generation);
    if (why.empty()) continue;
    if (count < limit) out += (count ? "; " : "") + why;
    ++count;
  }
  if (count > limit) {
    out += "; and " + std::to_string(count - limit) + " more";
  }
  if (count == 0) {
    return "every rank has joined generation " + std::to_string(generation);
  }
  return out;
}

}  // namespace hvd::rendezvous
