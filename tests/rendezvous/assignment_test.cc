#include "rendezvous/assignment.h"

#include <gtest/gtest.h>

namespace hvd::rendezvous {
namespace {

Assignment A(int rank, int size, int lr, int ls, int cr, int cs, int gpu = -1) {
  return Assignment{rank, size, lr, ls, cr, cs, gpu};
}

TEST(AssignmentTest, OneHost) {
  auto a = ComputeAssignments({{"localhost", 3}});
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0], A(0, 3, 0, 3, 0, 1));
  EXPECT_EQ(a[1], A(1, 3, 1, 3, 0, 1));
  EXPECT_EQ(a[2], A(2, 3, 2, 3, 0, 1));
}

TEST(AssignmentTest, HomogeneousHosts) {
  auto a = ComputeAssignments({{"h1", 2}, {"h2", 2}});
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0], A(0, 4, 0, 2, 0, 2));
  EXPECT_EQ(a[1], A(1, 4, 1, 2, 0, 2));
  EXPECT_EQ(a[2], A(2, 4, 0, 2, 1, 2));
  EXPECT_EQ(a[3], A(3, 4, 1, 2, 1, 2));
}

// The example of Horovod's documentation: -H x:1,y:3.
TEST(AssignmentTest, HeterogeneousHostsFollowHorovod) {
  auto a = ComputeAssignments({{"x", 1}, {"y", 3}});
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a[0], A(0, 4, 0, 1, 0, 2));
  EXPECT_EQ(a[1], A(1, 4, 0, 3, 1, 2));
  EXPECT_EQ(a[2], A(2, 4, 1, 3, 0, 1));
  EXPECT_EQ(a[3], A(3, 4, 2, 3, 0, 1));
}

TEST(AssignmentTest, ManyHosts) {
  std::vector<HostSlots> hosts;
  for (int h = 0; h < 100; ++h)
    hosts.push_back({"node" + std::to_string(h), 8});
  auto a = ComputeAssignments(hosts);
  ASSERT_EQ(a.size(), 800u);
  for (int r = 0; r < 800; ++r) {
    EXPECT_EQ(a[r], A(r, 800, r % 8, 8, r / 8, 100)) << "rank " << r;
  }
}

TEST(AssignmentTest, GpuIsLocalRankModuloHostGpus) {
  auto a = ComputeAssignments({{"g", 3, 2}, {"c", 1, 0}});
  EXPECT_EQ(a[0].gpu, 0);
  EXPECT_EQ(a[1].gpu, 1);
  EXPECT_EQ(a[2].gpu, 0);
  EXPECT_EQ(a[3].gpu, -1);
}

TEST(ValidateHostsTest, RejectsBadLists) {
  EXPECT_TRUE(ValidateHosts({{"a", 2}, {"b", 1}}, 3).ok());
  EXPECT_FALSE(ValidateHosts({}, 0).ok());
  EXPECT_FALSE(ValidateHosts({{"", 1}}, 1).ok());
  EXPECT_FALSE(ValidateHosts({{"a", 0}}, 0).ok());
  EXPECT_FALSE(ValidateHosts({{"a", 1}, {"a", 1}}, 2).ok());
  Status s = ValidateHosts({{"a", 2}}, 3);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("does not match the 2 slots"), std::string::npos);
}

}  // namespace
}  // namespace hvd::rendezvous
