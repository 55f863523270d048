#include "common/host_port.h"

#include "common/parse.h"

namespace hvd {

std::string HostPort::ToString() const {
  if (host.find(':') != std::string::npos) {
    return "[" + host + "]:" + std::to_string(port);
  }
  return host + ":" + std::to_string(port);
}

StatusOr<HostPort> ParseHostPort(std::string_view text, std::string_view what) {
  HostPort out;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() ||
        text[close + 1] != ':') {
      return Status::InvalidArgument(
          what, "expected [IPV6]:PORT, got '" + std::string(text) + "'");
    }
    out.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      return Status::InvalidArgument(
          what, "expected HOST:PORT (IPv6 as [ADDR]:PORT), got '" +
                    std::string(text) + "'");
    }
    out.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  if (out.host.empty()) {
    return Status::InvalidArgument(
        what, "host is empty in '" + std::string(text) + "'");
  }
  HVD_ASSIGN_OR_RETURN(
      int64_t port,
      ParseInt64(port_text, std::string(what) + " port", 0, 65535));
  out.port = static_cast<uint16_t>(port);
  return out;
}

StatusOr<std::vector<HostPort>> ParseHostPortList(std::string_view text,
                                                  std::string_view what) {
  std::vector<HostPort> out;
  for (std::string_view rest = text;;) {
    const size_t comma = rest.find(',');
    const std::string_view one = rest.substr(0, comma);
    if (one.empty()) {
      return Status::InvalidArgument(
          what, "'" + std::string(text) +
                    "' lists an empty address; use HOST:PORT[,HOST:PORT...]");
    }
    HVD_ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(one, what));
    if (hp.port == 0) {
      return Status::InvalidArgument(
          what, "'" + std::string(one) + "' needs a port other than 0");
    }
    out.push_back(std::move(hp));
    if (comma == std::string_view::npos) return out;
    rest = rest.substr(comma + 1);
  }
}

}  // namespace hvd
