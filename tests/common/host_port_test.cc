#include "common/host_port.h"

#include <gtest/gtest.h>

namespace hvd {
namespace {

TEST(HostPortTest, ParsesNamesAndAddresses) {
  EXPECT_EQ(*ParseHostPort("node1:5000", "addr"), (HostPort{"node1", 5000}));
  EXPECT_EQ(*ParseHostPort("127.0.0.1:0", "addr"), (HostPort{"127.0.0.1", 0}));
  EXPECT_EQ(*ParseHostPort("[::1]:80", "addr"), (HostPort{"::1", 80}));
}

TEST(HostPortTest, RoundTripsIpv6WithBrackets) {
  EXPECT_EQ((HostPort{"::1", 80}).ToString(), "[::1]:80");
  EXPECT_EQ((HostPort{"h", 1}).ToString(), "h:1");
}

TEST(HostPortTest, RejectsMalformed) {
  for (const char* bad : {"", "node1", ":80", "node1:", "node1:x", "::1:80",
                          "[::1]80", "[::1", "h:70000"}) {
    auto r = ParseHostPort(bad, "--rendezvous-addr");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--rendezvous-addr"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace hvd
