#include "launcher/hosts.h"

#include <gtest/gtest.h>

namespace hvd::launcher {
namespace {

TEST(ParseHostListTest, NamesSlotsAndDefaults) {
  auto h = ParseHostList("server1:2,server2:4,solo");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(
      *h, (std::vector<HostSpec>{{"server1", 2}, {"server2", 4}, {"solo", 1}}));
}

TEST(ParseHostListTest, Ipv4AndBracketedIpv6) {
  auto h = ParseHostList("127.0.0.1:2,[::1]:3,[fe80::1]");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(*h, (std::vector<HostSpec>{
                    {"127.0.0.1", 2}, {"::1", 3}, {"fe80::1", 1}}));
}

TEST(ParseHostListTest, RejectsBadEntriesWithTheReason) {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {"", "empty entry"},       {"a:2,", "empty entry"},
      {"a:-1", "between 0 and"}, {"a:x", "expected an integer"},
      {":2", "empty host"},      {"::1:2", "[ADDR]:SLOTS"},
      {"[::1:2", "without ']'"}, {"a:1,a:2", "listed twice"},
  };
  for (const Case& c : cases) {
    auto h = ParseHostList(c.text);
    ASSERT_FALSE(h.ok()) << c.text;
    EXPECT_NE(h.status().message().find(c.says), std::string::npos)
        << c.text << " -> " << h.status().message();
  }
}

// As Horovod reads them: spaces around entries, and hosts with no slots.
TEST(ParseHostListTest, SpacesAroundEntriesAndHostsWithNoSlots) {
  auto h = ParseHostList(" a:2 , b:0,c:1 ");
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(*h, (std::vector<HostSpec>{{"a", 2, ""}, {"c", 1, ""}}));
  EXPECT_FALSE(ParseHostList("a:1, ,b:1").ok());
  EXPECT_FALSE(ParseHostList("a:0,a:1").ok());  // still listed twice
}

TEST(FormatHostListTest, RoundTrips) {
  EXPECT_EQ(FormatHostList({{"a", 2}, {"::1", 1}}), "a:2,[::1]:1");
}

}  // namespace
}  // namespace hvd::launcher
