// What the host control plane (host_control.h) sends: a host's message to
// the other hosts' leaders, and a leader's hand-out of every host's
// messages to the ranks of its host. Pure.
//
//   host message   'M' + one engine message standing for all the host's
//                  ranks (a host of one rank; or the host's messages merged
//                  into one by the engine's merger, control_plane.h)
//                  'L' + per local rank: u32 length + message
//                  'E' + why the host could not take part (its leader
//                  found a rank of the host dead)
//   hand-out       'R' + u8 merged + (merged: i32 group per host, the
//                  cross plane's MergedGroups) + per host: u32 length +
//                  host message
//                  'E' + why the leaders' exchange failed
//
// Lengths are little-endian, as every host of a job is.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/control_plane.h"

namespace hvd::runtime {

// The host message of `local` (by local rank): one message where `merger`
// (may be null) merges them all, folded in local-rank order, else a list.
void PackHostMessage(const std::vector<std::string>& local,
                     ControlPlane::Merger* merger, std::string* out);

// Strings as one: per string, u32 length + bytes (a host message's list,
// a hand-out's hosts, and the hosts' rank lists at setup). Unpack: false
// where the bytes do not end exactly after the last string.
void PackBlocks(const std::vector<std::string>& blocks, std::string* out);
bool UnpackBlocks(std::string_view in, std::vector<std::string>* blocks);

// A host message saying why the host cannot take part.
std::string HostErrorMessage(std::string_view why);

// The leaders' merger: two host messages of one message each merge as the
// engine's merger merges those (the lower hosts' as the left operand).
class HostMerger final : public ControlPlane::Merger {
 public:
  explicit HostMerger(ControlPlane::Merger* engine) : engine_(engine) {}
  bool Merge(std::string_view low, std::string_view high,
             std::string* out) override;

 private:
  ControlPlane::Merger* engine_;
  std::string merged_;
};

// The leader's hand-out of `hosts` (by host index) and the leaders'
// groups (null: none merged).
void PackHandOut(const std::vector<std::string>& hosts,
                 const std::vector<int>* groups, std::string* out);
std::string HandOutError(std::string_view why);

// Every rank's reading of a hand-out, given each host's ranks (by host
// index, in local-rank order): `all` by rank, and `groups`, by rank, the
// lowest rank of the group it merged into, whose entry holds the group's
// message (the others' are empty). *merged: some group holds more than
// one rank (else every rank's entry is its own message). An error entry
// is the error, naming the host's first rank.
Status UnpackHandOut(std::string_view hand_out,
                     const std::vector<std::vector<int>>& host_ranks,
                     std::vector<std::string>* all, std::vector<int>* groups,
                     bool* merged);

}  // namespace hvd::runtime
