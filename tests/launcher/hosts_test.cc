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

// Found by fuzzing: a host file line "node[01-04,07],x" was one host whose
// -H form read back as two. Names hold only what host and user names may.
TEST(ParseHostListTest, RejectsCharactersNoHostNameHas) {
  EXPECT_FALSE(ParseHostFile("node[01-04,07],x\n", "hosts").ok());
  auto file = ParseHostFile("a;reboot slots=2\n", "hosts");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("host 'a;reboot' has ';'"),
            std::string::npos)
      << file.status().message();
  auto user = ParseHostList("bad user@h:1");
  ASSERT_FALSE(user.ok());
  EXPECT_NE(user.status().message().find("user name 'bad user' has ' '"),
            std::string::npos)
      << user.status().message();
  auto control =
      ParseHostList(std::string("a\x01"
                                "b:1"));
  ASSERT_FALSE(control.ok());
  EXPECT_NE(control.status().message().find("has '\\x01'"), std::string::npos)
      << control.status().message();
  EXPECT_TRUE(ParseHostList("node-1.example_x:2,[fe80::1%eth0]:1").ok());
  // Also found by fuzzing: "[fe80%eth0]:3" read back without its brackets.
  EXPECT_FALSE(ParseHostList("[fe80%eth0]:3").ok());
  EXPECT_FALSE(ParseHostList("[host]:1").ok());
}

TEST(FormatHostListTest, RoundTrips) {
  EXPECT_EQ(FormatHostList({{"a", 2}, {"::1", 1}}), "a:2,[::1]:1");
}

}  // namespace
}  // namespace hvd::launcher
