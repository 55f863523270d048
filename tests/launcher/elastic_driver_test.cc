#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <thread>

#include "launcher/elastic/driver.h"
#include "rendezvous/host_updates.h"

namespace hvd::launcher::elastic {
namespace {

// Discovery's answers, handed out one per Take as the test pushes them.
class ScriptedHosts final : public HostSource {
 public:
  explicit ScriptedHosts(std::deque<std::vector<HostSpec>>* answers)
      : answers_(answers) {}
  std::optional<std::vector<HostSpec>> Take() override {
    if (answers_->empty()) return std::nullopt;
    auto out = answers_->front();
    answers_->pop_front();
    return out;
  }

 private:
  std::deque<std::vector<HostSpec>>* answers_;
};

// The driver with a fixed host list and hooks that record what it asks.
struct Harness {
  std::vector<std::pair<std::vector<rendezvous::HostSlots>, int>> memberships;
  Status membership_status;
  std::set<std::string> unstartable;          // hosts whose spec cannot be made
  std::map<std::string, std::string> store;   // what set_key set
  std::vector<rendezvous::Member> members;    // what the rendezvous says
  std::deque<std::vector<HostSpec>> answers;  // for MakeScripted

  // Discovery answering `answers` one Tick at a time.
  std::unique_ptr<ElasticDriver> MakeScripted(ElasticOptions options = {}) {
    return std::make_unique<ElasticDriver>(
        options, HostManagerOptions{},
        std::make_unique<ScriptedHosts>(&answers), Hooks(), false);
  }

  std::unique_ptr<ElasticDriver> Make(std::vector<HostSpec> hosts,
                                      ElasticOptions options = {}) {
    return std::make_unique<ElasticDriver>(options, HostManagerOptions{},
                                           FixedHosts(std::move(hosts)),
                                           Hooks(), false);
  }

  ElasticDriverHooks Hooks() {
    ElasticDriverHooks hooks;
    hooks.set_key = [this](const std::string& k, const std::string& v) {
      store[k] = v;
      return Status::Ok();
    };
    hooks.members = [this] { return members; };
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
    return hooks;
  }

  // The host update announced as number n.
  std::optional<rendezvous::HostUpdate> Update(int n) {
    auto it = store.find(rendezvous::HostUpdateKey(n));
    if (it == store.end()) return std::nullopt;
    auto u = rendezvous::ParseHostUpdate(it->second);
    EXPECT_TRUE(u.ok());
    return u.ok() ? std::optional(*u) : std::nullopt;
  }
};

rendezvous::Member M(const std::string& host, int slot, int generation) {
  rendezvous::Member m;
  m.host = host;
  m.slot = slot;
  m.generation = generation;
  return m;
}

// Scripted discovery: host a alone, its generation 1 formed; then b joins,
// and its worker starts.
void FormAThenGrowToB(Harness& t, ElasticDriver& d) {
  t.answers.push_back({{"a", 1, ""}});
  d.Tick();
  t.members = {M("a", 0, 1)};
  t.answers.push_back({{"a", 1, ""}, {"b", 1, ""}});
  ASSERT_EQ(d.Tick().start.size(), 1u);
}

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

// Horovod's driver tells the workers of each host change discovery brings
// (added, removed, both), with its time; a host that leaves because its
// worker failed is not announced (the survivors reset on the failure).
TEST(ElasticDriverTest, AnnouncesDiscoveredHostChangesNotFailures) {
  Harness t;
  auto d = t.MakeScripted();
  t.answers.push_back({{"a", 1, ""}, {"b", 1, ""}});
  d->Tick();
  EXPECT_FALSE(t.Update(1));  // the first membership is no change
  const int64_t before = static_cast<int64_t>(std::time(nullptr));
  t.answers.push_back({{"a", 1, ""}, {"b", 1, ""}, {"c", 2, ""}});
  d->Tick();
  ASSERT_TRUE(t.Update(1));
  EXPECT_EQ(t.Update(1)->result, rendezvous::HostUpdateResult::kAdded);
  EXPECT_GE(t.Update(1)->timestamp, before);
  EXPECT_LE(t.Update(1)->timestamp, static_cast<int64_t>(std::time(nullptr)));
  EXPECT_EQ(t.store[rendezvous::kHostUpdateCountKey], "1");
  d->Exited("b", 0, 1);  // b fails: it leaves, unannounced
  d->Tick();
  EXPECT_EQ(t.memberships.size(), 3u);
  EXPECT_FALSE(t.Update(2));
  t.answers.push_back({{"a", 1, ""}, {"b", 1, ""}, {"c", 1, ""}});
  d->Tick();  // c loses a slot
  ASSERT_TRUE(t.Update(2));
  EXPECT_EQ(t.Update(2)->result, rendezvous::HostUpdateResult::kRemoved);
  t.answers.push_back({{"c", 1, ""}, {"d", 1, ""}});
  d->Tick();  // a leaves, d comes
  ASSERT_TRUE(t.Update(3));
  EXPECT_EQ(t.Update(3)->result, rendezvous::HostUpdateResult::kMixed);
  EXPECT_EQ(t.store[rendezvous::kHostUpdateCountKey], "3");
}

// A host joins, but the workers finish before they reset to take it in:
// its worker, waiting for a generation that cannot form now, is stopped,
// and the job ends with success (Horovod starts new workers only at a
// reset, so its job ends so too).
TEST(ElasticDriverTest, AWorkerThatNeverJoinedIsAbandonedWhenTheJobFinishes) {
  Harness t;
  auto d = t.MakeScripted();
  ASSERT_NO_FATAL_FAILURE(FormAThenGrowToB(t, *d));
  // b joined the new epoch; a never did: it finished its training instead.
  t.members = {M("a", 0, 0), M("b", 0, 2)};
  d->Exited("a", 0, 0);
  WorkerDriver::Step step = d->Tick();
  EXPECT_FALSE(step.failure);
  EXPECT_EQ(step.stop, (std::vector<std::pair<std::string, int>>{{"b", 0}}));
  EXPECT_TRUE(d->Tick().done);
}

TEST(ElasticDriverTest, WorkersOfTheFinishedGenerationAreLeftToFinish) {
  Harness t;
  auto d = t.MakeScripted();
  t.answers.push_back({{"a", 1, ""}});
  d->Tick();
  t.answers.push_back({{"a", 1, ""}, {"b", 1, ""}});
  d->Tick();
  t.members = {M("a", 0, 2), M("b", 0, 2)};  // both reset into epoch 2
  d->Exited("a", 0, 0);
  WorkerDriver::Step step = d->Tick();
  EXPECT_TRUE(step.stop.empty());
  EXPECT_FALSE(step.done);  // b finishes on its own
  d->Exited("b", 0, 0);
  EXPECT_TRUE(d->Tick().done);
}

// A worker finishes while the rendezvous cannot answer (a daemon
// restarting), or answers only about the membership before the reset: the
// driver cannot tell whether the new worker joined, so it decides only
// once an answer about the newest membership comes.
TEST(ElasticDriverTest, AFinishIsJudgedOnAnAnswerAboutTheNewestMembership) {
  for (bool joined : {true, false}) {
    SCOPED_TRACE(joined ? "b joined the reset" : "b never joined");
    Harness t;
    auto d = t.MakeScripted();
    ASSERT_NO_FATAL_FAILURE(FormAThenGrowToB(t, *d));
    t.members = {M("a", 0, 1)};  // an answer asked before the reset
    d->Exited("a", 0, 0);
    EXPECT_TRUE(d->Tick().stop.empty());
    t.members = {};  // the rendezvous is away
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    EXPECT_TRUE(d->Tick().stop.empty());
    t.members = {M("a", 0, joined ? 2 : 0), M("b", 0, 2)};
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    WorkerDriver::Step step = d->Tick();
    EXPECT_FALSE(step.failure);
    if (joined) {
      EXPECT_TRUE(step.stop.empty());  // b finishes on its own
      d->Exited("b", 0, 0);
      EXPECT_TRUE(d->Tick().done);
    } else {
      EXPECT_EQ(step.stop,
                (std::vector<std::pair<std::string, int>>{{"b", 0}}));
    }
  }
}

// A job whose workers never join (not hvd programs): nothing is abandoned.
TEST(ElasticDriverTest, WorkersThatNeverJoinAnythingAreNotAbandoned) {
  Harness t;
  auto d = t.Make({{"a", 1, ""}, {"b", 1, ""}});
  d->Tick();
  t.members = {M("a", 0, 0), M("b", 0, 0)};
  d->Exited("a", 0, 0);
  WorkerDriver::Step step = d->Tick();
  EXPECT_TRUE(step.stop.empty());
  EXPECT_FALSE(step.done);
}

}  // namespace
}  // namespace hvd::launcher::elastic
