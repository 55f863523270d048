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

TEST(HostManagerTest, CooldownsDoubleUpToTheRangesEnd) {
  HostManagerOptions o;
  o.cooldown_lo_s = 10;
  o.cooldown_hi_s = 35;
  HostManager m(o);
  auto t = Clock::now();
  m.Update({H("a", 2), H("b", 2)});
  // 1st failure: 10 s (+ up to 10 %), 2nd: 20 s, 3rd: 35 s (the cap).
  for (double want : {10.0, 20.0, 35.0}) {
    m.Blacklist("a", t);
    auto end = m.NextCooldownEnd(t);
    ASSERT_TRUE(end.has_value());
    const double got = std::chrono::duration<double>(*end - t).count();
    EXPECT_GE(got, want);
    EXPECT_LE(got, want * 1.1 + 1e-6);
    EXPECT_TRUE(m.Blacklisted("a", t + seconds(static_cast<int>(want) - 1)));
    EXPECT_EQ(Names(m.Current(t)), (std::vector<std::string>{"b:2"}));
    t = *end;
    EXPECT_FALSE(m.Blacklisted("a", t));
    // Back, in its old place.
    EXPECT_EQ(Names(m.Current(t)), (std::vector<std::string>{"a:2", "b:2"}));
  }
}

TEST(ElasticSizeTest, BetweenMinAndMax) {
  EXPECT_EQ(ElasticSize(4, 2, 0), 4);
  EXPECT_EQ(ElasticSize(4, 2, 3), 3);
  EXPECT_EQ(ElasticSize(1, 2, 3), 0);
  EXPECT_EQ(ElasticSize(2, 2, 3), 2);
  EXPECT_EQ(ElasticSize(0, 0, 0), 0);
}

}  // namespace
}  // namespace hvd::launcher::elastic
