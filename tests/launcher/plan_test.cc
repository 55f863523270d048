#include "launcher/plan.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace hvd::launcher {
namespace {

HostFacts AllLocal(int gpus = 0) {
  return HostFacts{[](const std::string&) { return true; }, gpus};
}

LaunchOptions Options(int np, std::vector<HostSpec> hosts) {
  LaunchOptions o;
  o.num_proc = np;
  o.hosts = std::move(hosts);
  o.command = {"prog"};
  return o;
}

TEST(PlanTest, FillsHostsInOrderUpToNp) {
  auto p = MakePlan(Options(3, {{"a", 2, ""}, {"b", 2, ""}, {"c", 2, ""}}),
                    AllLocal());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->hosts.size(), 2u);
  EXPECT_EQ(p->hosts[0].slots, 2);
  EXPECT_EQ(p->hosts[1].slots, 1);
  ASSERT_EQ(p->workers.size(), 3u);
  EXPECT_EQ(p->workers[2].host, "b");
  EXPECT_EQ(p->workers[2].slot, 0);
  EXPECT_EQ(p->workers[2].assignment.rank, 2);
  EXPECT_EQ(p->workers[2].assignment.cross_rank, 1);
}

TEST(PlanTest, TooFewSlotsSaysHowMany) {
  auto p = MakePlan(Options(5, {{"localhost", 4, ""}}), AllLocal());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(
      p.status().message(),
      "-np 5: needs 5 slots but -H localhost:4 has 4; add hosts or slots");
}

TEST(PlanTest, OtherHostsAndUserAtHostGoOverSsh) {
  HostFacts facts{[](const std::string& h) { return h == "localhost"; }, 2};
  auto p = MakePlan(
      Options(3,
              {{"localhost", 1, ""}, {"far", 1, ""}, {"localhost2", 1, "bob"}}),
      facts);
  // localhost2 is "not local" here only through the user; make it local:
  HostFacts local_all{[](const std::string&) { return true; }, 0};
  auto q = MakePlan(
      Options(2, {{"localhost", 1, ""}, {"127.0.0.1", 1, "root"}}), local_all);
  ASSERT_TRUE(p.ok() && q.ok());
  EXPECT_TRUE(p->workers[0].local);
  EXPECT_FALSE(p->workers[1].local);
  EXPECT_FALSE(p->workers[2].local);
  EXPECT_EQ(p->workers[2].user, "bob");
  EXPECT_FALSE(p->all_local);
  EXPECT_EQ(p->hosts[1].gpus, 0);  // GPUs of remote hosts are not known here
  EXPECT_TRUE(q->workers[0].local);
  EXPECT_FALSE(q->workers[1].local);  // user@ always means SSH
}

TEST(PlanTest, GpusOfLocalHostsReachTheAssignment) {
  auto p = MakePlan(Options(2, {{"localhost", 2, ""}}), AllLocal(2));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->workers[1].assignment.gpu, 1);
}

bool Has(const std::vector<std::string>& env, const std::string& kv) {
  return std::find(env.begin(), env.end(), kv) != env.end();
}
bool HasKey(const std::vector<std::string>& env, const std::string& key) {
  return std::any_of(env.begin(), env.end(), [&](const std::string& kv) {
    return kv.rfind(key + "=", 0) == 0;
  });
}

TEST(AppendToPathTest, AtTheEndOnceAndOnlyOnce) {
  EXPECT_EQ(AppendToPath("", "/p"), "/p");
  EXPECT_EQ(AppendToPath("/a:/b", "/p"), "/a:/b:/p");
  EXPECT_EQ(AppendToPath("/a:/p:/b", "/p"), "/a:/p:/b");
  EXPECT_EQ(AppendToPath("/p", "/p"), "/p");
  EXPECT_EQ(AppendToPath("/p:/a", "/p"), "/p:/a");
  EXPECT_EQ(AppendToPath("/pp:/a", "/p"), "/pp:/a:/p");
  EXPECT_EQ(AppendToPath("/a", ""), "/a");
}

TEST(WorkerEnvironmentTest, HorovodVariablesAndAccess) {
  auto p = MakePlan(Options(4, {{"x", 1, ""}, {"y", 3, ""}}), AllLocal());
  ASSERT_TRUE(p.ok());
  std::map<std::string, std::string> base = {
      {"PATH", "/bin"},
      {"OLDPWD", "/tmp"},
      {"CUDA_VISIBLE_DEVICES", "0"},
      {"BASH_FUNC_f%%", "() { :; }"},
      {"HOROVOD_RANK", "99"},
      {"HOROVOD_FUSION_THRESHOLD", "1024"}};
  JobAccess access{"127.0.0.1:5000", "job1", "secret", "", "", ""};
  auto env = WorkerEnvironment(base, *p, p->workers[2], access);
  EXPECT_TRUE(Has(env, "PATH=/bin"));
  EXPECT_TRUE(Has(env, "HOROVOD_FUSION_THRESHOLD=1024"));  // user knobs pass
  EXPECT_FALSE(HasKey(env, "OLDPWD"));
  EXPECT_FALSE(HasKey(env, "CUDA_VISIBLE_DEVICES"));
  EXPECT_FALSE(HasKey(env, "BASH_FUNC_f%%"));
  EXPECT_TRUE(Has(env, "HOROVOD_RANK=2"));
  EXPECT_TRUE(Has(env, "HOROVOD_SIZE=4"));
  EXPECT_TRUE(Has(env, "HOROVOD_LOCAL_RANK=1"));
  EXPECT_TRUE(Has(env, "HOROVOD_LOCAL_SIZE=3"));
  EXPECT_TRUE(Has(env, "HOROVOD_CROSS_RANK=0"));
  EXPECT_TRUE(Has(env, "HOROVOD_CROSS_SIZE=1"));
  EXPECT_TRUE(Has(env, "HOROVOD_HOSTNAME=y"));
  EXPECT_TRUE(Has(env, "HVD_HOST=y"));
  EXPECT_TRUE(Has(env, "HVD_SLOT=1"));
  EXPECT_TRUE(Has(env, "HVD_RENDEZVOUS_ADDR=127.0.0.1:5000"));
  EXPECT_TRUE(Has(env, "HVD_JOB_ID=job1"));
  EXPECT_TRUE(Has(env, "HVD_JOB_TOKEN=secret"));
  EXPECT_TRUE(Has(env, "HOROVOD_CONTROLLER=gloo"));
  EXPECT_TRUE(Has(env, "HOROVOD_START_TIMEOUT=30"));
}

}  // namespace
}  // namespace hvd::launcher
