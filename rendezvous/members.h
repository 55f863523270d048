// The members of a job as the rendezvous sees them, for saying whom a wait
// is stuck on: which rank sits on which host and slot, the generation it
// last joined, and how it exited when the launcher said so. Pure: no I/O.
//
// The table serves the list under kMembersKey (nobody sets that key; a Get
// of it is answered from the table at that moment). The launcher records a
// worker's exit under kExitKeyPrefix + "HOST/SLOT" (its exit status), and
// the list carries it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace hvd::rendezvous {

inline constexpr const char* kMembersKey = "hvd/members";
inline constexpr const char* kExitKeyPrefix = "hvd/exit/";

// kExitKeyPrefix + "HOST/SLOT".
std::string ExitKey(const std::string& host, int slot);

// "rank 3 (host b)": how every message about the job's members names one.
std::string RankOnHost(int rank, const std::string& host);

struct Member {
  int rank = 0;
  std::string host;
  int slot = 0;
  int generation = 0;              // the last one joined; 0: never joined
  std::optional<int> exit_status;  // set once the launcher saw it exit
  bool operator==(const Member&) const = default;
};

// One line per member, "RANK SLOT GENERATION EXIT HOST" (EXIT: "-" while
// it runs), host last so that it may hold any character but a newline.
std::string FormatMembers(const std::vector<Member>& members);
// The inverse; InvalidArgument naming the line that is not of that form.
StatusOr<std::vector<Member>> ParseMembers(std::string_view text);

// What holds up `waiter`, a member in `generation`: the members that exited,
// never joined, or are in another generation, in rank order, as "rank 0
// (host a) exited with status 0 after generation 1; rank 3 (host b) has not
// joined" (at most `limit` of them, then "and N more"). When every member
// is in `generation` and running: "every rank has joined generation N".
std::string DescribeMembersFor(const std::vector<Member>& members, int waiter,
                               int generation, size_t limit = 8);

}  // namespace hvd::rendezvous
