#include "launcher/local_host.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>

namespace hvd::launcher {
namespace {

std::string AddressString(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (sa->sa_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf,
              sizeof(buf));
  } else if (sa->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr,
              buf, sizeof(buf));
  }
  return buf;
}

bool IsLoopback(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    uint32_t a =
        ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr);
    return (a >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6) {
    return IN6_IS_ADDR_LOOPBACK(
        &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
  }
  return false;
}

std::set<std::string> LocalAddresses() {
  std::set<std::string> out;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return out;
  for (ifaddrs* i = ifs; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    std::string a = AddressString(i->ifa_addr);
    if (!a.empty()) out.insert(a);
  }
  freeifaddrs(ifs);
  return out;
}

}  // namespace

bool IsLocalHost(const std::string& host) {
  if (strcasecmp(host.c_str(), "localhost") == 0) return true;
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) == 0 &&
      strcasecmp(host.c_str(), name) == 0) {
    return true;
  }
  addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return false;
  std::set<std::string> local = LocalAddresses();
  bool found = false;
  for (addrinfo* r = res; r != nullptr && !found; r = r->ai_next) {
    found = IsLoopback(r->ai_addr) || local.count(AddressString(r->ai_addr));
  }
  freeaddrinfo(res);
  return found;
}

StatusOr<std::string> InterfaceAddress(const std::string& name) {
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) {
    return Status::Internal("getifaddrs", std::strerror(errno));
  }
  std::string v4, v6;
  for (ifaddrs* i = ifs; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || name != i->ifa_name) continue;
    if (i->ifa_addr->sa_family == AF_INET && v4.empty()) {
      v4 = AddressString(i->ifa_addr);
    } else if (i->ifa_addr->sa_family == AF_INET6 && v6.empty()) {
      v6 = AddressString(i->ifa_addr);
    }
  }
  freeifaddrs(ifs);
  if (!v4.empty()) return v4;
  if (!v6.empty()) return v6;
  return Status::NotFound("--network-interface " + name,
                          "no such interface with an address on this machine");
}

StatusOr<std::string> ResolveAddress(const std::string& name) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(name.c_str(), nullptr, &hints, &res) != 0 || !res) {
    return Status::NotFound(name, "does not resolve to an address");
  }
  std::string v4, v6;
  for (addrinfo* r = res; r != nullptr; r = r->ai_next) {
    if (r->ai_family == AF_INET && v4.empty()) v4 = AddressString(r->ai_addr);
    if (r->ai_family == AF_INET6 && v6.empty()) v6 = AddressString(r->ai_addr);
  }
  freeaddrinfo(res);
  return v4.empty() ? v6 : v4;
}

int CountLocalGpus() {
  static const std::regex kGpu("nvidia[0-9]+");
  int n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev", ec)) {
    if (std::regex_match(entry.path().filename().string(), kGpu)) ++n;
  }
  return n;
}

}  // namespace hvd::launcher
