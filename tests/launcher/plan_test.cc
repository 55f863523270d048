#include "launcher/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/settings.h"
#include "common/worker_env.h"
#include "launcher/job_watch.h"
#include "launcher/runners/srun_step.h"

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

// Every variable the launcher writes for its workers is declared: in
// common/worker_env.h or, for a tuning knob, in the settings table; and
// every variable worker_env.h declares is written by one of the launcher's
// paths (tests/runtime/worker_config_test.cc checks that libhvd reads
// each one declared for it).
TEST(WorkerEnvironmentTest, WritesExactlyTheDeclaredVariables) {
  LaunchOptions o = Options(4, {{"x", 1, ""}, {"y", 3, ""}});
  o.verbose = true;
  o.monitor = true;
  auto p = MakePlan(o, AllLocal());
  ASSERT_TRUE(p.ok());
  const JobAccess access{"127.0.0.1:5000", "job1", "secret", "CA",
                         "CERT",           "KEY"};
  std::vector<std::string> written =
      WorkerEnvironment({{"PATH", "/bin"}}, *p, p->workers[2], access);
  const std::vector<std::string> step =
      StepEnvironment(written, "10.0.0.1:5000", /*all_local=*/true, "x:1,y:3");
  written.insert(written.end(), step.begin(), step.end());
  std::map<std::string, std::string> asked;
  JobWatch::AskWorkers(o, asked);
  for (const auto& [k, v] : asked) written.push_back(k + "=" + v);
  SrunPlacement placed{"y", 1, p->workers[2].assignment};
  for (const std::string& kv : SrunWorkerEnv(placed)) written.push_back(kv);

  std::set<std::string> declared, tuning, seen;
  for (const worker_env::Var& v : worker_env::kAll) declared.insert(v.name);
  for (const settings::Setting& s : settings::Table()) {
    if (!s.env.empty()) tuning.insert(s.env);
  }
  for (const std::string& kv : written) {
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "PATH") continue;  // the launcher's own, passed on
    EXPECT_TRUE(declared.count(key) || tuning.count(key))
        << key << " is written but declared nowhere";
    if (declared.count(key)) seen.insert(key);
  }
  EXPECT_EQ(seen, declared);
}

// The step's environment holds what every task shares, and none of what
// each task's wrapper sets from its own place.
TEST(WorkerEnvironmentTest, StepEnvironmentLeavesOutThePerTaskVariables) {
  auto p = MakePlan(Options(4, {{"x", 1, ""}, {"y", 3, ""}}), AllLocal());
  ASSERT_TRUE(p.ok());
  JobAccess access{"127.0.0.1:5000", "job1", "secret", "", "", ""};
  auto env = StepEnvironment(WorkerEnvironment({}, *p, p->workers[0], access),
                             "10.0.0.1:5000",
                             /*all_local=*/false, "x:1,y:3");
  EXPECT_TRUE(Has(env, "HVD_JOB_ID=job1"));
  EXPECT_TRUE(Has(env, "HVD_RENDEZVOUS_ADDR=10.0.0.1:5000"));
  EXPECT_TRUE(Has(env, "HVD_TASK_HOSTS=x:1,y:3"));
  EXPECT_TRUE(Has(env, "HOROVOD_CONTROLLER=gloo"));
  for (const char* per_task : {"HVD_HOST", "HVD_SLOT", "HOROVOD_RANK",
                               "HOROVOD_HOSTNAME", "HVD_GLOO_ADDR"}) {
    EXPECT_FALSE(HasKey(env, per_task)) << per_task;
  }
  EXPECT_EQ(std::count_if(env.begin(), env.end(),
                          [](const std::string& kv) {
                            return kv.rfind("HVD_RENDEZVOUS_ADDR=", 0) == 0;
                          }),
            1);
}

}  // namespace
}  // namespace hvd::launcher
