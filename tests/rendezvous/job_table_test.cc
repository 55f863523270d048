#include "rendezvous/job_table.h"

#include <gtest/gtest.h>

namespace hvd::rendezvous {
namespace {

using std::chrono::milliseconds;

class JobTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto job = table_.CreateJob({{"h1", 2}, {"h2", 1}}, 3);
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    job_ = *job;
  }
  Clock::time_point In(int ms) { return t0_ + milliseconds(ms); }

  JobTable table_;
  CreatedJob job_;
  Clock::time_point t0_ = Clock::now();
};

TEST_F(JobTableTest, AuthenticatesOnlyTheJobsToken) {
  EXPECT_TRUE(table_.Authenticate(job_.job_id, job_.token).ok());
  EXPECT_EQ(table_.Authenticate(job_.job_id, "").code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(table_.Authenticate(job_.job_id, job_.token + "x").code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(table_.Authenticate("nope", job_.token).code(),
            StatusCode::kNotFound);
}

TEST_F(JobTableTest, JobsHaveDistinctIdsAndTokens) {
  auto other = table_.CreateJob({{"h", 1}}, 1);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->job_id, job_.job_id);
  EXPECT_NE(other->token, job_.token);
  EXPECT_EQ(table_.Authenticate(other->job_id, job_.token).code(),
            StatusCode::kUnauthenticated);
}

TEST_F(JobTableTest, ACreationKeyMakesTheJobOnceAndIsItsToken) {
  const std::string key(40, 'a');
  auto first = table_.CreateJob({{"h", 1}}, 1, false, key);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->token, key);
  EXPECT_TRUE(table_.Authenticate(first->job_id, key).ok());
  auto repeat = table_.CreateJob({{"h", 1}}, 1, false, key);
  ASSERT_TRUE(repeat.ok());
  EXPECT_EQ(repeat->job_id, first->job_id);
  EXPECT_NE(table_.CreateJob({{"h", 1}}, 1)->job_id, first->job_id);
  auto short_key = table_.CreateJob({{"h", 1}}, 1, false, "short");
  EXPECT_EQ(short_key.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(short_key.status().message().find("at least 32"),
            std::string::npos);
}

TEST_F(JobTableTest, JoinAssignsByHostAndSlotAndIsIdempotent) {
  auto a = table_.Join(job_.job_id, "h2", 0);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->rank, 2);
  EXPECT_EQ(a->cross_rank, 1);
  auto again = table_.Join(job_.job_id, "h2", 0);
  EXPECT_EQ(*again, *a);
  EXPECT_EQ(*table_.JoinedRanks(job_.job_id), std::vector<int>{2});
}

TEST_F(JobTableTest, EachJoinAfterTheLastGenerationStartsTheNextOne) {
  auto first = table_.Join(job_.job_id, "h2", 0);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->generation, 1);
  for (int g = 1; g < 5; ++g) {
    auto next = table_.Join(job_.job_id, "h2", 0, g);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    EXPECT_EQ(next->generation, g + 1);
    EXPECT_EQ(next->rank, 2);
  }
  // Another slot counts on its own.
  EXPECT_EQ(table_.Join(job_.job_id, "h1", 0)->generation, 1);
}

TEST_F(JobTableTest, ARepeatedJoinDoesNotSkipAGeneration) {
  ASSERT_TRUE(table_.Join(job_.job_id, "h2", 0).ok());
  ASSERT_EQ(table_.Join(job_.job_id, "h2", 0, 1)->generation, 2);
  // The same request again (its answer was lost): the same generation.
  EXPECT_EQ(table_.Join(job_.job_id, "h2", 0, 1)->generation, 2);
  // A fresh process for the slot: the slot's current generation.
  EXPECT_EQ(table_.Join(job_.job_id, "h2", 0, 0)->generation, 2);
}

TEST_F(JobTableTest, JoinRefusesAGenerationTheSlotNeverReached) {
  ASSERT_TRUE(table_.Join(job_.job_id, "h2", 0).ok());
  auto ahead = table_.Join(job_.job_id, "h2", 0, 3);
  EXPECT_EQ(ahead.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(ahead.status().message().find("only reached 1"), std::string::npos)
      << ahead.status().ToString();
  EXPECT_EQ(table_.Join(job_.job_id, "h2", 0, -1).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(JobTableTest, JoinRejectsUnknownHostAndBadSlot) {
  EXPECT_EQ(table_.Join(job_.job_id, "h3", 0).status().code(),
            StatusCode::kInvalidArgument);
  auto bad = table_.Join(job_.job_id, "h2", 1);
  EXPECT_EQ(bad.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(bad.status().message().find("has 1 slots"), std::string::npos);
}

TEST_F(JobTableTest, GetOfMissingKeyIsNotFoundNotEmpty) {
  EXPECT_EQ(table_.Get(job_.job_id, "k").status().code(),
            StatusCode::kNotFound);
  ASSERT_TRUE(table_.Set(job_.job_id, "k", "").ok());
  auto v = table_.Get(job_.job_id, "k");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "");
}

TEST_F(JobTableTest, KeysAreScopedToTheirJob) {
  auto other = table_.CreateJob({{"h", 1}}, 1);
  ASSERT_TRUE(table_.Set(job_.job_id, "k", "mine").ok());
  EXPECT_EQ(table_.Get(other->job_id, "k").status().code(),
            StatusCode::kNotFound);
}

TEST_F(JobTableTest, WaitAnswersAtOnceWhenKeysExist) {
  ASSERT_TRUE(table_.Set(job_.job_id, "a", "1").ok());
  ASSERT_TRUE(table_.Set(job_.job_id, "b", "2").ok());
  std::vector<std::string> got;
  auto id = table_.Wait(job_.job_id, {"b", "a"}, In(1000),
                        [&](StatusOr<std::vector<std::string>> v) {
                          ASSERT_TRUE(v.ok());
                          got = *v;
                        });
  EXPECT_EQ(id, 0u);
  EXPECT_EQ(got, (std::vector<std::string>{"2", "1"}));
}

TEST_F(JobTableTest, WaitCompletesWhenTheLastKeyIsSet) {
  int calls = 0;
  std::vector<std::string> got;
  table_.Wait(job_.job_id, {"a", "b", "a"}, In(1000),
              [&](StatusOr<std::vector<std::string>> v) {
                ++calls;
                ASSERT_TRUE(v.ok());
                got = *v;
              });
  ASSERT_TRUE(table_.Set(job_.job_id, "a", "1").ok());
  EXPECT_EQ(calls, 0);
  ASSERT_TRUE(
      table_.Set(job_.job_id, "a", "1b").ok());  // overwrite: still waiting
  EXPECT_EQ(calls, 0);
  ASSERT_TRUE(table_.Set(job_.job_id, "b", "2").ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(got, (std::vector<std::string>{"1b", "2", "1b"}));
  ASSERT_TRUE(table_.Set(job_.job_id, "c", "3").ok());
  EXPECT_EQ(calls, 1);
}

TEST_F(JobTableTest, WaitTimesOutNamingMissingKeys) {
  Status result;
  table_.Wait(
      job_.job_id, {"present", "absent"}, In(100),
      [&](StatusOr<std::vector<std::string>> v) { result = v.status(); });
  ASSERT_TRUE(table_.Set(job_.job_id, "present", "x").ok());
  auto next = table_.Expire(In(50));
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next, In(100));
  EXPECT_TRUE(result.ok());  // not yet completed
  EXPECT_FALSE(table_.Expire(In(100)).has_value());
  EXPECT_EQ(result.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(result.message().find("'absent'"), std::string::npos);
  EXPECT_EQ(result.message().find("'present'"), std::string::npos);
  // A late set does not call again.
  ASSERT_TRUE(table_.Set(job_.job_id, "absent", "x").ok());
}

TEST_F(JobTableTest, CancelWaitCompletesOnce) {
  int calls = 0;
  Status result;
  auto id = table_.Wait(job_.job_id, {"k"}, In(100),
                        [&](StatusOr<std::vector<std::string>> v) {
                          ++calls;
                          result = v.status();
                        });
  table_.CancelWait(id);
  table_.CancelWait(id);
  ASSERT_TRUE(table_.Set(job_.job_id, "k", "x").ok());
  table_.Expire(In(1000));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(result.code(), StatusCode::kCancelled);
}

TEST_F(JobTableTest, BarrierReleasesWhenAllRanksEnterAndResets) {
  int done = 0;
  auto cb = [&](Status s) {
    EXPECT_TRUE(s.ok());
    ++done;
  };
  EXPECT_NE(table_.Barrier(job_.job_id, "b", 0, In(100), cb), 0u);
  table_.Barrier(job_.job_id, "b", 0, In(100), cb);  // same rank twice
  table_.Barrier(job_.job_id, "b", 1, In(100), cb);
  EXPECT_EQ(done, 0);
  EXPECT_EQ(table_.Barrier(job_.job_id, "b", 2, In(100), cb), 0u);
  EXPECT_EQ(done, 4);
  // The next round of the same name starts empty.
  table_.Barrier(job_.job_id, "b", 2, In(100), cb);
  EXPECT_EQ(done, 4);
}

TEST_F(JobTableTest, BarrierTimeoutNamesMissingRanks) {
  Status result;
  table_.Barrier(job_.job_id, "b", 1, In(10), [&](Status s) { result = s; });
  table_.Expire(In(10));
  EXPECT_EQ(result.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(result.message().find("'0', '2'"), std::string::npos)
      << result.message();
}

TEST_F(JobTableTest, BarrierRejectsRankOutOfRange) {
  Status result;
  table_.Barrier(job_.job_id, "b", 3, In(10), [&](Status s) { result = s; });
  EXPECT_EQ(result.code(), StatusCode::kInvalidArgument);
}

TEST_F(JobTableTest, EndJobAbortsItsWaitsAndForgetsIt) {
  Status result;
  table_.Wait(
      job_.job_id, {"k"}, In(100),
      [&](StatusOr<std::vector<std::string>> v) { result = v.status(); });
  ASSERT_TRUE(table_.EndJob(job_.job_id, "its launcher exited").ok());
  EXPECT_EQ(result.code(), StatusCode::kAborted);
  EXPECT_NE(result.message().find("its launcher exited"), std::string::npos);
  EXPECT_EQ(table_.JobCount(), 0u);
  EXPECT_FALSE(table_.Expire(In(1000)).has_value());
}

TEST_F(JobTableTest, CallbacksMayReenterTheTable) {
  bool inner = false;
  table_.Wait(job_.job_id, {"k"}, In(100),
              [&](StatusOr<std::vector<std::string>>) {
                inner = table_.Get(job_.job_id, "k").ok();
              });
  ASSERT_TRUE(table_.Set(job_.job_id, "k", "x").ok());
  EXPECT_TRUE(inner);
}

}  // namespace
}  // namespace hvd::rendezvous

namespace hvd::rendezvous {
namespace {

TEST(JobTableLimitsTest, TooManyJobsNamesTheFlag) {
  TableLimits limits;
  limits.max_jobs = 2;
  JobTable table(limits);
  ASSERT_TRUE(table.CreateJob({{"h", 1}}, 1).ok());
  ASSERT_TRUE(table.CreateJob({{"h", 1}}, 1).ok());
  auto third = table.CreateJob({{"h", 1}}, 1);
  EXPECT_EQ(third.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(third.status().message().find("--max-jobs"), std::string::npos);
}

TEST(JobTableLimitsTest, KeysValueBytesAndJobBytes) {
  TableLimits limits;
  limits.max_keys_per_job = 2;
  limits.max_value_bytes = 10;
  limits.max_job_bytes = 30;
  JobTable table(limits);
  auto job = table.CreateJob({{"h", 1}}, 1);
  const std::string& id = job->job_id;
  Status s = table.Set(id, "big", std::string(11, 'x'));
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("--max-value-bytes"), std::string::npos);
  ASSERT_TRUE(table.Set(id, "a", std::string(10, 'x')).ok());
  ASSERT_TRUE(table.Set(id, "b", std::string(10, 'x')).ok());
  s = table.Set(id, "c", "x");
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("--max-keys-per-job"), std::string::npos);
  // Overwriting an existing key adds no key; the bytes still count.
  ASSERT_TRUE(table.Set(id, "a", "y").ok());
  limits.max_keys_per_job = 100;
  JobTable bytes_table(limits);
  auto job2 = bytes_table.CreateJob({{"h", 1}}, 1);
  ASSERT_TRUE(bytes_table.Set(job2->job_id, "k1", std::string(10, 'x')).ok());
  ASSERT_TRUE(bytes_table.Set(job2->job_id, "k2", std::string(10, 'x')).ok());
  s = bytes_table.Set(job2->job_id, "k3", std::string(10, 'x'));
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("--max-job-bytes"), std::string::npos);
  // Shrinking a value frees room.
  ASSERT_TRUE(bytes_table.Set(job2->job_id, "k1", "").ok());
  EXPECT_TRUE(bytes_table.Set(job2->job_id, "k3", std::string(10, 'x')).ok());
}

TEST(JobTableTtlTest, JobWithoutKeepAliveExpiresAndAbortsWaits) {
  Clock::time_point now = Clock::now();
  TableLimits limits;
  limits.job_ttl_seconds = 10;
  JobTable table(limits, [&] { return now; });
  auto job = table.CreateJob({{"h", 1}}, 1);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->ttl_seconds, 10);
  Status result;
  table.Wait(
      job->job_id, {"k"}, now + std::chrono::hours(1),
      [&](StatusOr<std::vector<std::string>> v) { result = v.status(); });
  // The earliest event is the job's expiry, not the wait's deadline.
  auto next = table.Expire(now);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next, now + std::chrono::seconds(10));
  now += std::chrono::seconds(6);
  ASSERT_TRUE(table.KeepAlive(job->job_id).ok());
  table.Expire(now + std::chrono::seconds(9));
  EXPECT_EQ(table.JobCount(), 1u);
  table.Expire(now + std::chrono::seconds(10));
  EXPECT_EQ(table.JobCount(), 0u);
  EXPECT_EQ(result.code(), StatusCode::kAborted);
  EXPECT_NE(result.message().find("no keep-alive for 10 s"), std::string::npos)
      << result.message();
  EXPECT_EQ(table.KeepAlive(job->job_id).code(), StatusCode::kNotFound);
}

TEST(JobTableTtlTest, ZeroTtlNeverExpires) {
  JobTable table;
  auto job = table.CreateJob({{"h", 1}}, 1);
  EXPECT_FALSE(
      table.Expire(Clock::now() + std::chrono::hours(1000)).has_value());
  EXPECT_EQ(table.JobCount(), 1u);
}

TEST(JobTableInfoTest, ReportsSizeAndJoinedRanks) {
  JobTable table;
  auto job = table.CreateJob({{"a", 2}, {"b", 2}}, 4);
  ASSERT_TRUE(table.Join(job->job_id, "b", 1).ok());
  ASSERT_TRUE(table.Join(job->job_id, "a", 0).ok());
  auto info = table.Info(job->job_id);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size, 4);
  EXPECT_EQ(info->joined, (std::vector<int>{0, 3}));
}

// Elastic jobs: the generation is the membership's epoch.
class ElasticJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto job = table_.CreateJob({{"a", 2}, {"b", 2}}, 4, /*elastic=*/true);
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    id_ = job->job_id;
  }
  Clock::time_point In(int ms) { return t0_ + milliseconds(ms); }
  // A join as a worker makes it: the result, and whether it answered now.
  StatusOr<Assignment> JoinNow(const std::string& host, int slot, int previous,
                               bool* waited = nullptr) {
    StatusOr<Assignment> got = Status::Internal("no answer");
    bool answered = false;
    JobTable::WaitId w = table_.JoinWait(id_, host, slot, previous, In(1000),
                                         [&](StatusOr<Assignment> a) {
                                           got = std::move(a);
                                           answered = true;
                                         });
    if (waited) *waited = w != 0;
    EXPECT_EQ(answered, w == 0);
    return got;
  }

  JobTable table_;
  std::string id_;
  Clock::time_point t0_ = Clock::now();
};

TEST_F(ElasticJobTest, EveryMemberJoinsTheSameEpoch) {
  for (const char* h : {"a", "b"}) {
    for (int slot = 0; slot < 2; ++slot) {
      auto a = JoinNow(h, slot, 0);
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      EXPECT_EQ(a->generation, 1);
    }
  }
  EXPECT_EQ(table_.JoinedRanks(id_)->size(), 4u);
  // A fixed job refuses a new membership.
  auto fixed = table_.CreateJob({{"x", 1}}, 1);
  EXPECT_EQ(table_.SetMembership(fixed->job_id, {{"x", 2}}, 2).status().code(),
            StatusCode::kFailedPrecondition);
}

// A launcher names the epoch it changes: a retry after a lost answer gets
// the epoch it made, and a change from an epoch the job left is refused.
TEST_F(ElasticJobTest, AMembershipFromAnEpochIsAppliedOnce) {
  auto second = table_.SetMembership(id_, {{"b", 1}}, 1, /*from_epoch=*/1);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(*second, 2);
  auto retried = table_.SetMembership(id_, {{"b", 1}}, 1, 1);
  ASSERT_TRUE(retried.ok()) << retried.status().ToString();
  EXPECT_EQ(*retried, 2);
  EXPECT_EQ(*table_.Get(id_, kMembershipEpochKey), "2");
  // Other hosts from the old epoch, or any change from a later one: refused,
  // naming the job's epoch.
  auto other = table_.SetMembership(id_, {{"c", 1}}, 1, 1);
  EXPECT_EQ(other.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(other.status().message().find("epoch 2, not 1"), std::string::npos)
      << other.status().message();
  EXPECT_EQ(table_.SetMembership(id_, {{"c", 1}}, 1, 3).status().code(),
            StatusCode::kFailedPrecondition);
  auto third = table_.SetMembership(id_, {{"c", 1}}, 1, 2);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(*third, 3);
}

TEST_F(ElasticJobTest, SurvivorsWaitForTheNextMembershipAndGetNewRanks) {
  ASSERT_TRUE(JoinNow("a", 0, 0).ok());
  ASSERT_TRUE(JoinNow("b", 1, 0).ok());
  // Host a fails: its survivor on b re-joins and waits for the launcher.
  std::vector<StatusOr<Assignment>> answers;
  auto record = [&](StatusOr<Assignment> a) { answers.push_back(a); };
  EXPECT_NE(table_.JoinWait(id_, "b", 1, 1, In(1000), record), 0u);
  EXPECT_NE(table_.JoinWait(id_, "b", 0, 1, In(1000), record), 0u);
  // A worker of a (still running) waits too; a is then removed.
  EXPECT_NE(table_.JoinWait(id_, "a", 1, 1, In(1000), record), 0u);
  EXPECT_TRUE(answers.empty());
  // The plain Join says to wait rather than answering the old epoch.
  EXPECT_EQ(table_.Join(id_, "b", 1, 1).status().code(),
            StatusCode::kFailedPrecondition);
  auto epoch = table_.SetMembership(id_, {{"b", 2}, {"c", 1}}, 3);
  ASSERT_TRUE(epoch.ok());
  EXPECT_EQ(*epoch, 2);
  ASSERT_EQ(answers.size(), 3u);
  ASSERT_TRUE(answers[0].ok()) << answers[0].status().ToString();
  EXPECT_EQ(answers[0]->rank, 1);  // b's slot 1, now that b goes first
  EXPECT_EQ(answers[0]->size, 3);
  EXPECT_EQ(answers[0]->generation, 2);
  EXPECT_EQ(answers[1]->rank, 0);
  EXPECT_EQ(answers[1]->local_size, 2);
  EXPECT_EQ(answers[2].status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(answers[2].status().message().find("removed"), std::string::npos);
  // A new host's worker joins the same epoch from scratch.
  auto c = JoinNow("c", 0, 0);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->rank, 2);
  EXPECT_EQ(c->generation, 2);
  EXPECT_EQ(c->cross_size, 2);
}

TEST_F(ElasticJobTest, TheEpochIsAKeyLikeAnyOther) {
  StatusOr<std::vector<std::string>> seen = Status::Internal("none");
  table_.Wait(id_, {kMembershipEpochKey}, In(1000),
              [&](StatusOr<std::vector<std::string>> v) { seen = v; });
  EXPECT_EQ(seen.status().code(), StatusCode::kInternal);  // still waiting
  ASSERT_TRUE(table_.SetMembership(id_, {{"a", 1}}, 1).ok());
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  EXPECT_EQ((*seen)[0], "2");
  EXPECT_EQ(*table_.Get(id_, kMembershipEpochKey), "2");
}

TEST_F(ElasticJobTest, OldBarrierRoundsEndAndWaitingJoinsTimeOut) {
  Status barrier;
  table_.Barrier(id_, "step", 0, In(1000), [&](Status s) { barrier = s; });
  StatusOr<Assignment> late = Status::Internal("none");
  ASSERT_TRUE(JoinNow("a", 0, 0).ok());
  table_.JoinWait(id_, "a", 0, 1, In(10),
                  [&](StatusOr<Assignment> a) { late = a; });
  table_.Expire(In(10));
  EXPECT_EQ(late.status().code(), StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(table_.SetMembership(id_, {{"a", 1}}, 1).ok());
  EXPECT_EQ(barrier.code(), StatusCode::kAborted);
  // The new membership's barrier counts its one rank.
  Status again = Status::Internal("none");
  EXPECT_EQ(
      table_.Barrier(id_, "step", 0, In(1000), [&](Status s) { again = s; }),
      0u);
  EXPECT_TRUE(again.ok());
  // Ending the job ends a waiting join too (b has not re-joined, so the
  // epoch stays).
  StatusOr<Assignment> ended = Status::Internal("none");
  ASSERT_TRUE(table_.SetMembership(id_, {{"a", 1}, {"b", 1}}, 2).ok());
  ASSERT_TRUE(JoinNow("a", 0, 2).ok());
  table_.JoinWait(id_, "a", 0, 3, In(1000),
                  [&](StatusOr<Assignment> a) { ended = a; });
  EXPECT_EQ(ended.status().code(), StatusCode::kInternal);  // still waiting
  ASSERT_TRUE(table_.EndJob(id_, "done").ok());
  EXPECT_EQ(ended.status().code(), StatusCode::kAborted);
}

// Every member re-joins (a collective failed everywhere, nobody died): the
// last one's join starts the next epoch with the same hosts, and all of
// them get their places in it.
TEST_F(ElasticJobTest, EveryMemberWaitingStartsTheNextEpochWithTheSameHosts) {
  for (const char* h : {"a", "b"}) {
    for (int slot = 0; slot < 2; ++slot) ASSERT_TRUE(JoinNow(h, slot, 0).ok());
  }
  std::vector<StatusOr<Assignment>> got(4, Status::Internal("none"));
  int i = 0;
  for (const char* h : {"a", "b"}) {
    for (int slot = 0; slot < 2; ++slot, ++i) {
      table_.JoinWait(id_, h, slot, 1, In(1000),
                      [&got, i](StatusOr<Assignment> a) { got[i] = a; });
      // Until the last member asks, everyone waits.
      if (i < 3) EXPECT_EQ(got[0].status().code(), StatusCode::kInternal);
    }
  }
  for (int r = 0; r < 4; ++r) {
    ASSERT_TRUE(got[r].ok()) << got[r].status().ToString();
    EXPECT_EQ(got[r]->generation, 2);
    EXPECT_EQ(got[r]->rank, r);
    EXPECT_EQ(got[r]->size, 4);
  }
  EXPECT_EQ(*table_.Get(id_, kMembershipEpochKey), "2");
}

// An elastic job made before its launcher knows any host: joins wait for
// the first membership, which is epoch 1.
TEST(ElasticJobNoHostsTest, JoinsWaitForTheFirstMembership) {
  JobTable table;
  auto job = table.CreateJob({}, 0, /*elastic=*/true);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  // A fixed job still needs hosts.
  EXPECT_EQ(table.CreateJob({}, 0).status().code(),
            StatusCode::kInvalidArgument);
  StatusOr<Assignment> got = Status::Internal("none");
  EXPECT_NE(table.JoinWait(job->job_id, "a", 0, 0,
                           Clock::now() + std::chrono::seconds(5),
                           [&](StatusOr<Assignment> a) { got = a; }),
            0u);
  EXPECT_EQ(got.status().code(), StatusCode::kInternal);
  ASSERT_EQ(*table.SetMembership(job->job_id, {{"a", 1}}, 1), 1);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->generation, 1);
  EXPECT_EQ(got->size, 1);
}

}  // namespace
}  // namespace hvd::rendezvous
