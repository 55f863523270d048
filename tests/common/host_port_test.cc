#include "common/host_port.h"

#include <gtest/gtest.h>

#include <vector>

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

TEST(HostPortTest, ListsOneOrMoreServers) {
  auto one = ParseHostPortList("node1:5000", "--rendezvous-addr");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(*one, (std::vector<HostPort>{{"node1", 5000}}));
  auto three = ParseHostPortList("a:1,[::1]:2,10.0.0.3:3", "--rendezvous-addr");
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  EXPECT_EQ(*three,
            (std::vector<HostPort>{{"a", 1}, {"::1", 2}, {"10.0.0.3", 3}}));
  for (const char* bad :
       {"", ",", "a:1,", ",a:1", "a:1,,b:2", "a:1,b", "a:0"}) {
    auto r = ParseHostPortList(bad, "--rendezvous-addr");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--rendezvous-addr"), std::string::npos)
        << r.status().message();
  }
}

}  // namespace
}  // namespace hvd
