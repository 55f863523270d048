// Elastic jobs' launcher parts: the discovery script's output, running the
// script (real /bin/sh), and the host manager's order, blacklist and
// cooldowns (pure, time passed in).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "launcher/elastic/discovery.h"
#include "launcher/elastic/host_manager.h"
#include "launcher/elastic/planner.h"
#include "launcher/hosts.h"

namespace hvd::launcher::elastic {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::vector<std::string> Names(const std::vector<HostSpec>& hosts) {
  std::vector<std::string> out;
  for (const HostSpec& h : hosts) {
    out.push_back(h.host + ":" + std::to_string(h.slots));
  }
  return out;
}

TEST(DiscoveredHostsTest, LinesWithAndWithoutSlots) {
  auto hosts = ParseDiscoveredHosts("a:2\n  b:4  \n\nc\n[::1]:3\na:2\n", 8);
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(Names(*hosts),
            (std::vector<std::string>{"a:2", "b:4", "c:8", "::1:3"}));
  auto zero = ParseDiscoveredHosts("a:0\nb:1", 0);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(Names(*zero), (std::vector<std::string>{"a:0", "b:1"}));
  EXPECT_TRUE(ParseDiscoveredHosts("", 0).ok());
}

TEST(DiscoveredHostsTest, ErrorsSayWhatToPrint) {
  auto bare = ParseDiscoveredHosts("a:2\nb\n", 0);
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.status().message().find("--slots-per-host"),
            std::string::npos);
  auto twice = ParseDiscoveredHosts("a:2\na:3\n", 0);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("'a'"), std::string::npos);
  EXPECT_FALSE(ParseDiscoveredHosts("a:x\n", 0).ok());
  EXPECT_FALSE(ParseDiscoveredHosts("a:-1\n", 0).ok());
}

TEST(RunScriptTest, OutputStatusAndTimeout) {
  auto out = RunScript("printf 'a:1\\nb:2\\n'", seconds(10));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "a:1\nb:2\n");
  auto failed = RunScript("echo a:1; exit 3", seconds(10));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("status 3"), std::string::npos);
  const auto start = std::chrono::steady_clock::now();
  auto hung = RunScript("sleep 30", milliseconds(200));
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
  ASSERT_FALSE(hung.ok());
  EXPECT_EQ(hung.status().code(), StatusCode::kDeadlineExceeded);
}

TEST(RunScriptTest, NothingTheScriptStartedIsLeftRunning) {
  char dir[] = "/tmp/hvd-discovery-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string pidfile = std::string(dir) + "/pid";
  // The script leaves a sleeper behind (its stdout closed, so the read
  // ends) and exits 0; the sleeper is in its group and must go with it.
  auto out = RunScript(
      "sleep 30 >/dev/null & echo $! > " + pidfile + "; echo a:1", seconds(10));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::ifstream f(pidfile);
  pid_t sleeper = 0;
  f >> sleeper;
  ASSERT_GT(sleeper, 0);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = ::kill(sleeper, 0) != 0;
    if (!gone) ::usleep(10000);
  }
  EXPECT_TRUE(gone) << "pid " << sleeper << " still runs";
  std::remove(pidfile.c_str());
  ::rmdir(dir);
}

TEST(HostDiscoveryTest, KeepsTheLastGoodAnswer) {
  char dir[] = "/tmp/hvd-discovery-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string answer = std::string(dir) + "/hosts";
  std::ofstream(answer) << "a:2\nb:2\n";
  HostDiscovery d("cat " + answer, 0, seconds(10));
  ASSERT_TRUE(d.Poll().ok());
  EXPECT_TRUE(d.ever_answered());
  std::ofstream(answer) << "a:2\nnonsense:\n";
  EXPECT_FALSE(d.Poll().ok());
  EXPECT_EQ(Names(d.last()), (std::vector<std::string>{"a:2", "b:2"}));
  std::remove(answer.c_str());
  EXPECT_FALSE(d.Poll().ok());  // cat fails: the file is gone
  EXPECT_EQ(Names(d.last()), (std::vector<std::string>{"a:2", "b:2"}));
  ::rmdir(dir);
}

HostSpec H(const std::string& name, int slots) {
  HostSpec h;
  h.host = name;
  h.slots = slots;
  return h;
}

TEST(HostManagerTest, OldHostsKeepTheirPlaceNewOnesGoLast) {
  HostManager m;
  const auto t = Clock::now();
  EXPECT_EQ(m.Update({H("b", 2), H("a", 2)}), (HostChange{true, false}));
  EXPECT_EQ(Names(m.Current(t)), (std::vector<std::string>{"b:2", "a:2"}));
  // c arrives, listed first: it still goes last.
  EXPECT_EQ(m.Update({H("c", 1), H("a", 2), H("b", 2)}),
            (HostChange{true, false}));
  EXPECT_EQ(Names(m.Current(t)),
            (std::vector<std::string>{"b:2", "a:2", "c:1"}));
  EXPECT_EQ(m.Slots(t), 5);
  // b goes, a loses a slot: removed; nothing new.
  EXPECT_EQ(m.Update({H("c", 1), H("a", 1)}), (HostChange{false, true}));
  EXPECT_EQ(Names(m.Current(t)), (std::vector<std::string>{"a:1", "c:1"}));
  // b comes back: it keeps its old place, first.
  EXPECT_EQ(m.Update({H("c", 1), H("a", 1), H("b", 2)}),
            (HostChange{true, false}));
  EXPECT_EQ(Names(m.Current(t)),
            (std::vector<std::string>{"b:2", "a:1", "c:1"}));
  EXPECT_EQ(m.Update({H("c", 1), H("a", 1), H("b", 2)}), HostChange{});
  // Zero slots is absent.
  EXPECT_EQ(m.Update({H("c", 0), H("a", 1), H("b", 2)}),
            (HostChange{false, true}));
  EXPECT_EQ(Names(m.Current(t)), (std::vector<std::string>{"b:2", "a:1"}));
}

TEST(HostManagerTest, BlacklistedForGoodWithoutACooldownRange) {
  HostManager m;
  const auto t = Clock::now();
  m.Update({H("a", 2), H("b", 2)});
  m.Blacklist("a", t);
  EXPECT_TRUE(m.Blacklisted("a", t + std::chrono::hours(1000)));
  EXPECT_EQ(Names(m.Current(t + seconds(5))),
            (std::vector<std::string>{"b:2"}));
  EXPECT_FALSE(m.NextCooldownEnd(t).has_value());
}

TEST(HostManagerTest, CooldownsAreHorovodsUpToTheRangesEnd) {
  HostManagerOptions o;
  o.cooldown_lo_s = 10;
  o.cooldown_hi_s = 75;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    o.seed = seed;
    HostManager m(o);
    auto t = Clock::now();
    m.Update({H("a", 2), H("b", 2)});
    // Failure n keeps it out 10 * 2^n s plus up to 10 s, at most 75 s:
    // 20-30 s, 40-50 s, then the cap.
    for (auto [least, most] :
         {std::pair{20.0, 30.0}, {40.0, 50.0}, {75.0, 75.0}, {75.0, 75.0}}) {
      m.Blacklist("a", t);
      auto end = m.NextCooldownEnd(t);
      ASSERT_TRUE(end.has_value());
      const double got = std::chrono::duration<double>(*end - t).count();
      EXPECT_GE(got, least - 1e-6);
      EXPECT_LE(got, most + 1e-6);
      EXPECT_TRUE(m.Blacklisted("a", t + seconds(static_cast<int>(least) - 1)));
      EXPECT_EQ(Names(m.Current(t)), (std::vector<std::string>{"b:2"}));
      t = *end;
      EXPECT_FALSE(m.Blacklisted("a", t));
      // Back, in its old place.
      EXPECT_EQ(Names(m.Current(t)), (std::vector<std::string>{"a:2", "b:2"}));
    }
  }
}

TEST(HostManagerTest, ACooldownNeverEndsBeforeTheRangesStart) {
  HostManagerOptions o;
  o.cooldown_lo_s = 30;
  o.cooldown_hi_s = 40;  // below 2 * lo: the upper limit rules
  HostManager m(o);
  const auto t = Clock::now();
  m.Update({H("a", 1)});
  m.Blacklist("a", t);
  const double got =
      std::chrono::duration<double>(*m.NextCooldownEnd(t) - t).count();
  EXPECT_DOUBLE_EQ(got, 40.0);
}

TEST(ElasticSizeTest, BetweenMinAndMax) {
  EXPECT_EQ(ElasticSize(4, 2, 0), 4);
  EXPECT_EQ(ElasticSize(4, 2, 3), 3);
  EXPECT_EQ(ElasticSize(1, 2, 3), 0);
  EXPECT_EQ(ElasticSize(2, 2, 3), 2);
  EXPECT_EQ(ElasticSize(0, 0, 0), 0);
}

std::vector<std::string> SlotNames(const std::vector<Slot>& slots) {
  std::vector<std::string> out;
  for (const Slot& s : slots)
    out.push_back(s.host + "/" + std::to_string(s.slot));
  return out;
}

TEST(ElasticPlannerTest, StartsOnTheHostsThenDropsAFailedOneAndGrows) {
  HostManager hosts;
  ElasticOptions o;
  o.min_np = 2;
  ElasticPlanner p(o, &hosts);
  auto t = Clock::now();
  hosts.Update({H("a", 2), H("b", 2)});
  Actions first = p.Tick(t);
  EXPECT_EQ(Names(first.membership), (std::vector<std::string>{"a:2", "b:2"}));
  EXPECT_EQ(first.size, 4);
  EXPECT_EQ(SlotNames(first.start),
            (std::vector<std::string>{"a/0", "a/1", "b/0", "b/1"}));
  EXPECT_TRUE(first.stop.empty());
  EXPECT_TRUE(p.Tick(t).membership.empty());  // nothing changed
  // b/1 fails: b is blacklisted, its other worker stopped, the job goes on
  // on a alone.
  p.WorkerExited({"b", 1}, 137, t);
  Actions lost = p.Tick(t);
  EXPECT_EQ(Names(lost.membership), (std::vector<std::string>{"a:2"}));
  EXPECT_EQ(lost.size, 2);
  EXPECT_EQ(SlotNames(lost.stop), (std::vector<std::string>{"b/0"}));
  EXPECT_TRUE(lost.start.empty());
  EXPECT_EQ(p.resets(), 1);
  // Discovery adds c: the job grows to it.
  hosts.Update({H("a", 2), H("b", 2), H("c", 1)});
  Actions grown = p.Tick(t);
  EXPECT_EQ(Names(grown.membership), (std::vector<std::string>{"a:2", "c:1"}));
  EXPECT_EQ(SlotNames(grown.start), (std::vector<std::string>{"c/0"}));
  EXPECT_EQ(p.resets(), 2);
  // Discovery removes a: its workers stop.
  hosts.Update({H("c", 1), H("d", 1)});
  Actions shrunk = p.Tick(t);
  EXPECT_EQ(Names(shrunk.membership), (std::vector<std::string>{"c:1", "d:1"}));
  EXPECT_EQ(SlotNames(shrunk.stop), (std::vector<std::string>{"a/0", "a/1"}));
  EXPECT_EQ(SlotNames(shrunk.start), (std::vector<std::string>{"d/0"}));
}

TEST(ElasticPlannerTest, MaxNpCutsTheLastHost) {
  HostManager hosts;
  ElasticOptions o;
  o.max_np = 3;
  ElasticPlanner p(o, &hosts);
  hosts.Update({H("a", 2), H("b", 2), H("c", 2)});
  Actions a = p.Tick(Clock::now());
  EXPECT_EQ(Names(a.membership), (std::vector<std::string>{"a:2", "b:1"}));
  EXPECT_EQ(a.size, 3);
}

TEST(ElasticPlannerTest, WaitsForMinNpUpToTheTimeout) {
  HostManager hosts;
  ElasticOptions o;
  o.min_np = 3;
  o.elastic_timeout = seconds(60);
  ElasticPlanner p(o, &hosts);
  auto t = Clock::now();
  hosts.Update({H("a", 2)});
  Actions wait = p.Tick(t);
  EXPECT_TRUE(wait.membership.empty());
  EXPECT_FALSE(wait.failure.has_value());
  // Enough arrives in time: the job starts.
  hosts.Update({H("a", 2), H("b", 1)});
  EXPECT_EQ(p.Tick(t + seconds(30)).size, 3);
  // Then b fails and nothing replaces it for 60 s: the job ends, saying
  // why, and every worker is stopped.
  p.WorkerExited({"b", 0}, 1, t + seconds(31));
  EXPECT_FALSE(p.Tick(t + seconds(31)).failure.has_value());
  Actions gave_up = p.Tick(t + seconds(91));
  ASSERT_TRUE(gave_up.failure.has_value());
  EXPECT_NE(gave_up.failure->find("--min-np"), std::string::npos);
  EXPECT_NE(gave_up.failure->find("offer 2"), std::string::npos);
  EXPECT_EQ(SlotNames(gave_up.stop), (std::vector<std::string>{"a/0", "a/1"}));
}

TEST(ElasticPlannerTest, ResetLimitEndsTheJob) {
  HostManager hosts;
  ElasticOptions o;
  o.reset_limit = 1;
  ElasticPlanner p(o, &hosts);
  auto t = Clock::now();
  hosts.Update({H("a", 1), H("b", 1), H("c", 1)});
  p.Tick(t);
  p.WorkerExited({"a", 0}, 1, t);
  EXPECT_FALSE(p.Tick(t).failure.has_value());  // reset 1: allowed
  p.WorkerExited({"b", 0}, 1, t);
  Actions end = p.Tick(t);
  ASSERT_TRUE(end.failure.has_value());
  EXPECT_NE(end.failure->find("--reset-limit 1"), std::string::npos);
  EXPECT_EQ(SlotNames(end.stop), (std::vector<std::string>{"c/0"}));
}

TEST(ElasticPlannerTest, DoneWhenEveryWorkerFinished) {
  HostManager hosts;
  ElasticPlanner p({}, &hosts);
  auto t = Clock::now();
  hosts.Update({H("a", 2)});
  p.Tick(t);
  p.WorkerExited({"a", 0}, 0, t);
  EXPECT_FALSE(p.Tick(t).done);
  // Finishing: discovery changes no longer move the job.
  hosts.Update({H("a", 2), H("b", 2)});
  EXPECT_TRUE(p.Tick(t).membership.empty());
  p.WorkerExited({"a", 1}, 0, t);
  EXPECT_TRUE(p.Tick(t).done);
}

TEST(ElasticPlannerTest, AFailureAfterSuccessEndsTheJob) {
  HostManager hosts;
  ElasticPlanner p({}, &hosts);
  auto t = Clock::now();
  hosts.Update({H("a", 1), H("b", 1)});
  p.Tick(t);
  p.WorkerExited({"a", 0}, 0, t);
  p.WorkerExited({"b", 0}, 3, t);
  Actions end = p.Tick(t);
  ASSERT_TRUE(end.failure.has_value());
  EXPECT_NE(end.failure->find("status 3"), std::string::npos);
}

// Horovod's endings: when every worker failed, or every host the job ran
// on is blacklisted, the job ends at once, even with other hosts offered.
TEST(ElasticPlannerTest, WhenEveryWorkerFailedTheJobEndsAtOnce) {
  HostManager hosts;
  ElasticOptions o;
  o.max_np = 2;
  ElasticPlanner p(o, &hosts);
  auto t = Clock::now();
  hosts.Update({H("a", 1), H("b", 1), H("c", 1)});  // c: spare
  p.Tick(t);
  p.WorkerExited({"a", 0}, 1, t);
  Actions go_on = p.Tick(t);  // b is left: it goes on with b and c
  ASSERT_FALSE(go_on.failure.has_value());
  EXPECT_EQ(Names(go_on.membership), (std::vector<std::string>{"b:1", "c:1"}));
  p.WorkerExited({"b", 0}, 1, t);
  p.WorkerExited({"c", 0}, 2, t);
  Actions end = p.Tick(t);
  ASSERT_TRUE(end.failure.has_value());
  EXPECT_NE(end.failure->find("no worker is left"), std::string::npos)
      << *end.failure;
  EXPECT_NE(end.failure->find("on c, status 2"), std::string::npos)
      << *end.failure;
}

TEST(ElasticPlannerTest, WhenEveryHostIsBlacklistedTheJobEndsAtOnce) {
  HostManagerOptions cooldown;
  cooldown.cooldown_lo_s = 1;
  cooldown.cooldown_hi_s = 2;  // a would come back: Horovod ends anyway
  HostManager hosts(cooldown);
  ElasticPlanner p({}, &hosts);
  auto t = Clock::now();
  hosts.Update({H("a", 2)});
  p.Tick(t);
  p.WorkerExited({"a", 1}, 137, t);  // a/0 still runs, on a blacklisted host
  Actions end = p.Tick(t);
  ASSERT_TRUE(end.failure.has_value());
  EXPECT_EQ(SlotNames(end.stop), (std::vector<std::string>{"a/0"}));
}

TEST(ElasticPlannerTest, AbandonedWorkersStopAndTheirEndsDoNotCount) {
  HostManager hosts;
  ElasticPlanner p({}, &hosts);
  auto t = Clock::now();
  hosts.Update({H("a", 1)});
  p.Tick(t);
  hosts.Update({H("a", 1), H("b", 1)});
  EXPECT_EQ(SlotNames(p.Tick(t).start), (std::vector<std::string>{"b/0"}));
  p.Abandon({{"b", 0}});
  p.WorkerExited({"a", 0}, 0, t);
  Actions stop = p.Tick(t);
  EXPECT_EQ(SlotNames(stop.stop), (std::vector<std::string>{"b/0"}));
  EXPECT_FALSE(stop.done);           // not before the stop is carried out
  p.WorkerExited({"b", 0}, 143, t);  // its SIGTERM
  Actions end = p.Tick(t);
  EXPECT_FALSE(end.failure.has_value());
  EXPECT_TRUE(end.done);
}

}  // namespace
}  // namespace hvd::launcher::elastic
