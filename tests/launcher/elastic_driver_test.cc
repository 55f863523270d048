#include <gtest/gtest.h>

#include "launcher/elastic/driver.h"

namespace hvd::launcher::elastic {
namespace {

// The driver with a fixed host list and hooks that record what it asks.
struct Harness {
  std::vector<std::pair<std::vector<rendezvous::HostSlots>, int>> memberships;
  Status membership_status;
  std::set<std::string> unstartable;  // hosts whose spec cannot be made

  std::unique_ptr<ElasticDriver> Make(std::vector<HostSpec> hosts,
                                      ElasticOptions options = {}) {
    ElasticDriverHooks hooks;
    hooks.set_membership = [this](std::vector<rendezvous::HostSlots> h,
                                  int size) {
      memberships.push_back({h, size});
      return membership_status;
    };
    hooks.gpus = [](const HostSpec&) { return 0; };
    hooks.make_spec =
        [this](const HostSpec& h, int slot,
               const rendezvous::Assignment& a) -> StatusOr<ProcessSpec> {
      if (unstartable.count(h.host)) {
        return Status::Unavailable(h.host, "cannot be reached");
      }
      ProcessSpec spec;
      spec.argv = {h.host, std::to_string(slot), std::to_string(a.rank)};
      return spec;
    };
    return std::make_unique<ElasticDriver>(options, HostManagerOptions{},
                                           FixedHosts(std::move(hosts)),
                                           std::move(hooks), false);
  }
};

TEST(ElasticDriverTest, SetsTheMembershipThenStartsItsWorkers) {
  Harness t;
  auto d = t.Make({{"a", 2, ""}, {"b", 1, ""}});
  WorkerDriver::Step step = d->Tick();
  ASSERT_FALSE(step.failure) << *step.failure;
  ASSERT_EQ(t.memberships.size(), 1u);
  EXPECT_EQ(t.memberships[0].second, 3);
  ASSERT_EQ(step.start.size(), 3u);
  // Ranks by host order; each spec made for its host, slot and rank.
  EXPECT_EQ(step.start[2].host, "b");
  EXPECT_EQ(step.start[2].label, 2);
  EXPECT_EQ(step.start[2].spec.argv, (std::vector<std::string>{"b", "0", "2"}));
  // Nothing changes: nothing to do.
  step = d->Tick();
  EXPECT_TRUE(step.start.empty() && step.stop.empty() && !step.failure);
  EXPECT_EQ(t.memberships.size(), 1u);
}

TEST(ElasticDriverTest, AFailedWorkersHostLeavesAndTheRestStay) {
  Harness t;
  auto d = t.Make({{"a", 2, ""}, {"b", 2, ""}});
  d->Tick();
  d->Exited("b", 0, 137);
  WorkerDriver::Step step = d->Tick();
  ASSERT_FALSE(step.failure);
  // b's other worker is stopped; a's keep running (no start, no stop).
  EXPECT_EQ(step.stop, (std::vector<std::pair<std::string, int>>{{"b", 1}}));
  EXPECT_TRUE(step.start.empty());
  ASSERT_EQ(t.memberships.size(), 2u);
  EXPECT_EQ(t.memberships[1].first,
            (std::vector<rendezvous::HostSlots>{{"a", 2, 0}}));
  EXPECT_EQ(t.memberships[1].second, 2);
}

TEST(ElasticDriverTest, AHostThatCannotBeStartedCountsAsFailed) {
  Harness t;
  t.unstartable = {"b"};
  auto d = t.Make({{"a", 1, ""}, {"b", 1, ""}});
  WorkerDriver::Step step = d->Tick();
  ASSERT_EQ(step.start.size(), 1u);  // a's only
  EXPECT_EQ(step.start[0].host, "a");
  // Next tick: b is out, the job is a alone.
  step = d->Tick();
  ASSERT_EQ(t.memberships.size(), 2u);
  EXPECT_EQ(t.memberships[1].second, 1);
}

TEST(ElasticDriverTest, ARefusedMembershipEndsTheJob) {
  Harness t;
  t.membership_status = Status::ResourceExhausted("job", "too many keys");
  auto d = t.Make({{"a", 1, ""}});
  WorkerDriver::Step step = d->Tick();
  ASSERT_TRUE(step.failure);
  EXPECT_NE(step.failure->find("cannot set the job's hosts"), std::string::npos)
      << *step.failure;
  EXPECT_TRUE(step.start.empty());
}

}  // namespace
}  // namespace hvd::launcher::elastic
