// An elastic job's membership moving on under its workers: they notice it
// (what commit() checks) and join the next generation with their new ranks,
// and a rank still meeting its peers in a superseded generation follows the
// job at once instead of waiting out its timeout for peers that have gone.
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "rendezvous/members.h"
#include "runtime/context.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

TEST(MembershipTest, WorkersSeeANewMembershipAndJoinIt) {
  TestJob job({{"a", 1}, {"b", 1}}, /*elastic=*/true);
  ASSERT_TRUE(job.ok());
  std::vector<std::unique_ptr<Context>> ctx(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      auto c = Context::Create(job.Config(r));
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      ctx[r] = std::move(*c);
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(ctx[0] && ctx[1]);
  EXPECT_FALSE(ctx[0]->MembershipChanged());
  ASSERT_TRUE(job.table().SetMembership(job.job_id(), {{"b", 1}}, 1).ok());
  EXPECT_TRUE(ctx[0]->MembershipChanged());
  EXPECT_TRUE(ctx[1]->MembershipChanged());
  // b's worker leaves and joins the new membership alone, as rank 0.
  const int left = ctx[1]->assignment().generation;
  ctx[1].reset();
  auto again = Context::Create(job.Config(1), left);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->assignment().rank, 0);
  EXPECT_EQ((*again)->assignment().size, 1);
  EXPECT_EQ((*again)->assignment().generation, 2);
  EXPECT_FALSE((*again)->MembershipChanged());
}

// Whether the worker of `host` has joined generation `generation`, as the
// table's members list says.
bool Joined(TestJob& job, const std::string& host, int generation) {
  auto text = job.table().Get(job.job_id(), rendezvous::kMembersKey);
  if (!text.ok()) return false;
  auto members = rendezvous::ParseMembers(*text);
  if (!members.ok()) return false;
  for (const rendezvous::Member& m : *members) {
    if (m.host == host && m.generation == generation) return true;
  }
  return false;
}

// Slot `slot` of a two-host elastic job (a, b) joins generation 1 alone;
// its peer never comes. Once it has joined, the launcher's membership moves
// to its host alone. Its init() must end in generation 2, as rank 0 of 1.
// Its peer waits are a minute long: without following the job it would
// fail (DeadlineExceeded) rather than succeed.
void FollowsTheJob(int slot) {
  TestJob job({{"a", 1}, {"b", 1}}, /*elastic=*/true);
  ASSERT_TRUE(job.ok());
  WorkerConfig c = job.Config(slot);
  c.elastic = true;
  c.join_timeout = std::chrono::milliseconds(60000);
  c.gloo_timeout = std::chrono::milliseconds(60000);
  const std::string host = c.host;
  StatusOr<std::unique_ptr<Context>> made = Status::Unknown("", "not run");
  std::thread worker([&] { made = Context::Create(c); });
  while (!Joined(job, host, 1)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(job.table().SetMembership(job.job_id(), {{host, 1}}, 1).ok());
  worker.join();
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ((*made)->assignment().generation, 2);
  EXPECT_EQ((*made)->assignment().rank, 0);
  EXPECT_EQ((*made)->assignment().size, 1);
}

// Rank 0 of generation 1 accepts its peer's connections (and publishes
// its address); rank 1 waits for rank 0's address in the store.
TEST(MembershipTest, ARankAcceptingPeersOfASupersededGenerationFollowsTheJob) {
  FollowsTheJob(0);
}

TEST(MembershipTest, ARankWaitingForKeysOfASupersededGenerationFollowsTheJob) {
  FollowsTheJob(1);
}

}  // namespace
}  // namespace hvd::runtime
