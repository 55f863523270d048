#include "rendezvous/host_updates.h"

#include "common/parse.h"

namespace hvd::rendezvous {

std::string HostUpdateKey(int n) {
  return "hvd/host-update/" + std::to_string(n);
}

std::string FormatHostUpdate(const HostUpdate& u) {
  return std::to_string(u.timestamp) + " " +
         std::to_string(static_cast<int>(u.result));
}

StatusOr<HostUpdate> ParseHostUpdate(std::string_view text) {
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) {
    return Status::InvalidArgument("host update '" + std::string(text) + "'",
                                   "is not 'TIMESTAMP RESULT'");
  }
  HVD_ASSIGN_OR_RETURN(int64_t ts,
                       ParseInt64(std::string(text.substr(0, space)),
                                  "host update timestamp", 0, INT64_MAX));
  HVD_ASSIGN_OR_RETURN(int64_t result,
                       ParseInt64(std::string(text.substr(space + 1)),
                                  "host update result", 0, 3));
  return HostUpdate{ts, static_cast<HostUpdateResult>(result)};
}

HostUpdateResult CompareHosts(const std::vector<HostSlots>& before,
                              const std::vector<HostSlots>& after) {
  std::map<std::string, int> had, has;
  for (const HostSlots& h : before) had[h.host] += h.slots;
  for (const HostSlots& h : after) has[h.host] += h.slots;
  return CompareSlots(had, has);
}

HostUpdateResult CompareSlots(const std::map<std::string, int>& had,
                              const std::map<std::string, int>& has) {
  int result = 0;
  for (const auto& [host, slots] : had) {
    auto it = has.find(host);
    if (it == has.end() || it->second < slots) result |= 1;
  }
  for (const auto& [host, slots] : has) {
    auto it = had.find(host);
    if (it == had.end() || slots > it->second) result |= 2;
  }
  return static_cast<HostUpdateResult>(result);
}

}  // namespace hvd::rendezvous
