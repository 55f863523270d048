// The daemon's page of its jobs (rendezvous/jobs_page.h): the admin check,
// the table's summaries, and the store's health as the JSON says them.
#include "rendezvous/jobs_page.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace hvd::rendezvous {
namespace {

using nlohmann::json;

TEST(JobsPageTest, OnlyTheAdminTokenAsABearerIsAdmin) {
  EXPECT_TRUE(IsAdmin("Bearer s3cret", "s3cret"));
  EXPECT_FALSE(IsAdmin("Bearer s3cre", "s3cret"));
  EXPECT_FALSE(IsAdmin("s3cret", "s3cret"));
  EXPECT_FALSE(IsAdmin("Basic s3cret", "s3cret"));
  EXPECT_FALSE(IsAdmin("", "s3cret"));
  EXPECT_FALSE(IsAdmin("Bearer ", ""));  // no token set: nobody
}

TEST(JobsPageTest, SummariesSayEachJobAndTheStoresHealth) {
  JobTable table;
  auto fixed = table.CreateJob({{"a", 1}, {"b", 1}}, 2, false);
  ASSERT_TRUE(fixed.ok());
  ASSERT_TRUE(table.Set(fixed->job_id, "k", "value").ok());
  auto elastic = table.CreateJob({}, 0, true);
  ASSERT_TRUE(elastic.ok());
  const std::vector<JobSummary> jobs = table.Summaries();
  ASSERT_EQ(jobs.size(), 2u);
  const json s = json::parse(JobsJson(jobs, "memory only", Status::Ok()));
  EXPECT_EQ(s["store"]["kind"], "memory only");
  EXPECT_TRUE(s["store"]["healthy"].get<bool>());
  for (const json& j : s["jobs"]) {
    if (j["id"] == fixed->job_id) {
      EXPECT_FALSE(j["elastic"].get<bool>());
      EXPECT_EQ(j["size"], 2);
      EXPECT_EQ(j["keys"], 1);
      EXPECT_EQ(j["members"],
                json::parse(R"([[0,"a",0,0,null],[1,"b",0,0,null]])"));
      EXPECT_TRUE(j["expires_in_s"].is_null());
    } else {
      EXPECT_EQ(j["id"], elastic->job_id);
      EXPECT_TRUE(j["elastic"].get<bool>());
      EXPECT_EQ(j["epoch"], 0);  // no membership yet
    }
  }
  const json failing = json::parse(
      JobsJson({}, "state directory /s",
               Status::ResourceExhausted("journal", "no space left")));
  EXPECT_FALSE(failing["store"]["healthy"].get<bool>());
  EXPECT_NE(
      failing["store"]["last_error"].get<std::string>().find("no space left"),
      std::string::npos);
}

}  // namespace
}  // namespace hvd::rendezvous
