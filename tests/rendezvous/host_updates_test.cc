#include "rendezvous/host_updates.h"

#include <gtest/gtest.h>

namespace hvd::rendezvous {
namespace {

TEST(HostUpdatesTest, FormatAndParseAreInverses) {
  for (HostUpdateResult r :
       {HostUpdateResult::kNoUpdate, HostUpdateResult::kRemoved,
        HostUpdateResult::kAdded, HostUpdateResult::kMixed}) {
    const HostUpdate u{1765000000, r};
    auto back = ParseHostUpdate(FormatHostUpdate(u));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, u);
  }
  EXPECT_EQ(HostUpdateKey(7), "hvd/host-update/7");
  for (const char* bad : {"", "12", "12 4", "x 1", "12 -1", "-5 1"}) {
    EXPECT_FALSE(ParseHostUpdate(bad).ok()) << bad;
  }
}

TEST(HostUpdatesTest, CompareHostsAsHorovodsCheckUpdate) {
  const std::vector<HostSlots> ab = {{"a", 2, 0}, {"b", 1, 0}};
  EXPECT_EQ(CompareHosts(ab, ab), HostUpdateResult::kNoUpdate);
  // Order alone is no change.
  EXPECT_EQ(CompareHosts(ab, {{"b", 1, 0}, {"a", 2, 0}}),
            HostUpdateResult::kNoUpdate);
  EXPECT_EQ(CompareHosts(ab, {{"a", 2, 0}}), HostUpdateResult::kRemoved);
  EXPECT_EQ(CompareHosts(ab, {{"a", 1, 0}, {"b", 1, 0}}),
            HostUpdateResult::kRemoved);
  EXPECT_EQ(CompareHosts(ab, {{"a", 3, 0}, {"b", 1, 0}}),
            HostUpdateResult::kAdded);
  EXPECT_EQ(CompareHosts(ab, {{"a", 2, 0}, {"b", 1, 0}, {"c", 1, 0}}),
            HostUpdateResult::kAdded);
  EXPECT_EQ(CompareHosts(ab, {{"a", 2, 0}, {"c", 1, 0}}),
            HostUpdateResult::kMixed);
  EXPECT_EQ(CompareHosts(ab, {{"a", 1, 0}, {"b", 2, 0}}),
            HostUpdateResult::kMixed);
}

}  // namespace
}  // namespace hvd::rendezvous
