// The members list: its text form, what it says about a wait, and the
// table's answer under kMembersKey.
#include "rendezvous/members.h"

#include <gtest/gtest.h>

#include "rendezvous/job_table.h"

namespace hvd::rendezvous {
namespace {

TEST(MembersTest, TextRoundTripsWithHostsOfAnyCharacter) {
  std::vector<Member> members = {{0, "a b", 0, 2, std::nullopt},
                                 {1, "[::1]", 1, 0, 137}};
  const std::string text = FormatMembers(members);
  EXPECT_EQ(text, "0 0 2 - a b\n1 1 0 137 [::1]\n");
  auto back = ParseMembers(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, members);
}

TEST(MembersTest, ALineOfAnotherFormIsRefusedByName) {
  for (const char* bad : {"0 0 1 -\n", "x 0 1 - h\n", "0 0 1 300 h\n"}) {
    auto parsed = ParseMembers(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().message().find("is not RANK SLOT GENERATION"),
              std::string::npos)
        << parsed.status().ToString();
  }
}

TEST(MembersTest, SaysWhoExitedNeverJoinedOrIsInAnotherGeneration) {
  std::vector<Member> members = {{0, "a", 0, 1, 0},
                                 {1, "a", 1, 2, std::nullopt},
                                 {2, "b", 0, 0, std::nullopt},
                                 {3, "b", 1, 1, std::nullopt},
                                 {4, "c", 0, 3, std::nullopt},
                                 {5, "c", 1, 0, 1}};
  EXPECT_EQ(DescribeMembersFor(members, 1, 2),
            "rank 0 (host a) exited with status 0 after generation 1; "
            "rank 2 (host b) has not joined; "
            "rank 3 (host b) is still in generation 1; "
            "rank 4 (host c) has moved on to generation 3; "
            "rank 5 (host c) exited with status 1 before joining");
  EXPECT_EQ(DescribeMembersFor(members, 1, 2, 2),
            "rank 0 (host a) exited with status 0 after generation 1; "
            "rank 2 (host b) has not joined; and 3 more");
}

TEST(MembersTest, EveryoneInTheGenerationIsSaidSo) {
  std::vector<Member> members = {{0, "a", 0, 2, std::nullopt},
                                 {1, "a", 1, 2, std::nullopt}};
  EXPECT_EQ(DescribeMembersFor(members, 0, 2),
            "every rank has joined generation 2");
}

TEST(MembersTest, TheTableAnswersWithJoinsAndRecordedExits) {
  JobTable table;
  auto job = table.CreateJob({{"h1", 2}, {"h2", 1}}, 3);
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(table.Join(job->job_id, "h1", 1).ok());
  ASSERT_TRUE(table.Join(job->job_id, "h1", 1, 1).ok());
  ASSERT_TRUE(table.Join(job->job_id, "h2", 0).ok());
  ASSERT_TRUE(table.Set(job->job_id, ExitKey("h2", 0), "0").ok());
  auto text = table.Get(job->job_id, kMembersKey);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "0 0 0 - h1\n1 1 2 - h1\n2 0 1 0 h2\n");
  // The list is the table's: nobody sets it.
  EXPECT_EQ(table.Set(job->job_id, kMembersKey, "x").code(),
            StatusCode::kInvalidArgument);
}

TEST(MembersTest, AnElasticJobsMembersAreInItsEpoch) {
  JobTable table;
  auto job = table.CreateJob({{"h1", 1}, {"h2", 1}}, 2, /*elastic=*/true);
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(table.Join(job->job_id, "h2", 0).ok());
  EXPECT_EQ(*table.Get(job->job_id, kMembersKey), "0 0 0 - h1\n1 0 1 - h2\n");
  ASSERT_TRUE(table.SetMembership(job->job_id, {{"h2", 1}}, 1).ok());
  EXPECT_EQ(*table.Get(job->job_id, kMembersKey), "0 0 0 - h2\n");
}

}  // namespace
}  // namespace hvd::rendezvous
