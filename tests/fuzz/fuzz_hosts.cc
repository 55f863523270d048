// The host parsers: -H lists, host files, a discovery script's output and
// Slurm's node lists. Whatever they accept must format back to a list that
// parses to the same hosts.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "launcher/hosts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hvd::launcher;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto check_round_trip = [](const std::vector<HostSpec>& hosts) {
    // Hosts of no slots (a discovery answer may hold them) have no -H form,
    // nor has a list of none ("a:0" lists no host that runs anything).
    if (hosts.empty()) return;
    for (const HostSpec& h : hosts) {
      if (h.slots < 1) return;
    }
    auto again = ParseHostList(FormatHostList(hosts));
    if (!again.ok() || *again != hosts) std::abort();
  };
  if (auto hosts = ParseHostList(text); hosts.ok()) check_round_trip(*hosts);
  if (auto hosts = ParseHostFile(text, "hostfile"); hosts.ok()) {
    check_round_trip(*hosts);
  }
  (void)ParseDiscoveredHosts(text, 1 + (size % 4));
  // Slurm's pair: the node list, then after the first newline the tasks.
  const size_t nl = text.find('\n');
  if (nl != std::string_view::npos) {
    (void)ParseSlurmHosts(text.substr(0, nl), text.substr(nl + 1));
  }
  return 0;
}
