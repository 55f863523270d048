#include "launcher/hosts.h"

#include <unordered_set>

#include "common/parse.h"

namespace hvd::launcher {
namespace {

StatusOr<HostSpec> ParseEntry(std::string_view entry) {
  HostSpec spec;
  std::string_view slots_text;
  bool has_slots = false;
  if (!entry.empty() && entry.front() == '[') {
    size_t close = entry.find(']');
    if (close == std::string_view::npos) {
      return Status::InvalidArgument(
          "-H", "'" + std::string(entry) + "' has '[' without ']'");
    }
    spec.host = std::string(entry.substr(1, close - 1));
    std::string_view rest = entry.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return Status::InvalidArgument(
            "-H",
            "expected ':SLOTS' after ']' in '" + std::string(entry) + "'");
      }
      slots_text = rest.substr(1);
      has_slots = true;
    }
  } else {
    size_t colon = entry.rfind(':');
    if (colon != std::string_view::npos && entry.find(':') != colon) {
      return Status::InvalidArgument(
          "-H", "'" + std::string(entry) +
                    "' looks like an IPv6 address; write it as [ADDR]:SLOTS");
    }
    spec.host = std::string(entry.substr(0, colon));
    if (colon != std::string_view::npos) {
      slots_text = entry.substr(colon + 1);
      has_slots = true;
    }
  }
  if (spec.host.empty()) {
    return Status::InvalidArgument(
        "-H", "empty host name in '" + std::string(entry) + "'");
  }
  if (has_slots) {
    HVD_ASSIGN_OR_RETURN(
        int64_t slots,
        ParseInt64(slots_text, "-H slots of '" + spec.host + "'", 1, 1 << 20));
    spec.slots = static_cast<int>(slots);
  }
  return spec;
}

}  // namespace

StatusOr<std::vector<HostSpec>> ParseHostList(std::string_view text) {
  std::vector<HostSpec> out;
  std::unordered_set<std::string> seen;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view entry = text.substr(start, comma - start);
    if (entry.empty()) {
      return Status::InvalidArgument(
          "-H", "empty entry in '" + std::string(text) + "' (stray comma?)");
    }
    HVD_ASSIGN_OR_RETURN(HostSpec spec, ParseEntry(entry));
    if (!seen.insert(spec.host).second) {
      return Status::InvalidArgument(
          "-H", "host '" + spec.host +
                    "' is listed twice; list it once with all its slots");
    }
    out.push_back(std::move(spec));
    start = comma + 1;
  }
  return out;
}

std::string FormatHostList(const std::vector<HostSpec>& hosts) {
  std::string out;
  for (const HostSpec& h : hosts) {
    if (!out.empty()) out += ",";
    if (h.host.find(':') != std::string::npos) {
      out += "[" + h.host + "]";
    } else {
      out += h.host;
    }
    out += ":" + std::to_string(h.slots);
  }
  return out;
}

}  // namespace hvd::launcher
