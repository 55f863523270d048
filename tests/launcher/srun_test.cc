#include "launcher/runners/srun_step.h"

#include <gtest/gtest.h>

#include "common/worker_env.h"

namespace hvd::launcher {
namespace {

std::map<std::string, std::string> Task(const std::string& procid,
                                        const std::string& node) {
  return {{worker_env::kTaskHosts, "a:2,b:1"},
          {"SLURM_PROCID", procid},
          {"SLURMD_NODENAME", node}};
}

// Task i is rank i of the plan, on the plan's host for it.
TEST(SrunTest, TaskIsThePlansRankOnItsHost) {
  auto p = PlaceSrunTask(Task("1", "a"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->host, "a");
  EXPECT_EQ(p->slot, 1);
  EXPECT_EQ(p->assignment.rank, 1);
  EXPECT_EQ(p->assignment.size, 3);
  EXPECT_EQ(p->assignment.local_rank, 1);
  p = PlaceSrunTask(Task("2", "b"));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->slot, 0);
  EXPECT_EQ(p->assignment.cross_rank, 1);
  const std::vector<std::string> env = SrunWorkerEnv(*p);
  EXPECT_NE(std::find(env.begin(), env.end(), "HVD_HOST=b"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "HOROVOD_RANK=2"), env.end());
  EXPECT_NE(std::find(env.begin(), env.end(), "HVD_SLOT=0"), env.end());
}

// The step's environment is checked, not trusted.
TEST(SrunTest, MisplacedOrMissingIsRefused) {
  auto p = PlaceSrunTask(Task("2", "a"));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(
      p.status().message().find("ran task 2 on a but the job has it on b"),
      std::string::npos)
      << p.status().message();
  p = PlaceSrunTask(Task("3", "b"));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("is past the job's 3 workers"),
            std::string::npos);
  auto env = Task("0", "a");
  env.erase(worker_env::kTaskHosts);
  p = PlaceSrunTask(env);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("HVD_TASK_HOSTS: is not set"),
            std::string::npos)
      << p.status().message();
}

TEST(SrunTest, CommandLineAndHostfile) {
  std::vector<HostSpec> hosts = {{"n1", 2, ""}, {"n2", 1, ""}};
  EXPECT_EQ(SrunHostfile(hosts), "n1\nn1\nn2\n");
  auto argv = SrunArgv("/usr/bin/srun", hosts, "/w", {"train", "--x"});
  const std::vector<std::string> want = {"/usr/bin/srun",
                                         "--label",
                                         "--kill-on-bad-exit=1",
                                         "--input=none",
                                         "--distribution=arbitrary",
                                         "--ntasks=3",
                                         "/w",
                                         "--srun",
                                         "--",
                                         "train",
                                         "--x"};
  EXPECT_EQ(argv, want);
}

TEST(SrunTest, LabelsMarkersAndSrunsOwnLines) {
  int task = -1;
  size_t at = 0;
  ASSERT_TRUE(SplitSrunLabel(" 3: hello", &task, &at));
  EXPECT_EQ(task, 3);
  EXPECT_EQ(std::string(" 3: hello").substr(at), "hello");
  ASSERT_TRUE(SplitSrunLabel("12:", &task, &at));
  EXPECT_EQ(task, 12);
  EXPECT_FALSE(SplitSrunLabel("srun: error: x", &task, &at));
  EXPECT_FALSE(SplitSrunLabel("hello", &task, &at));
  int code = 0;
  EXPECT_TRUE(ParseSrunExitMarker(SrunExitMarker(137), &code));
  EXPECT_EQ(code, 137);
  EXPECT_FALSE(ParseSrunExitMarker("[hvd-exit] x", &code));
  EXPECT_FALSE(ParseSrunExitMarker("exit 3", &code));
  std::string node, what;
  ASSERT_TRUE(
      ParseSrunTaskError("srun: error: hvdn2: task 3: Killed", &node, &what));
  EXPECT_EQ(node, "hvdn2");
  EXPECT_EQ(what, "task 3: Killed");
  ASSERT_TRUE(ParseSrunTaskError(
      "srun: error: n1: tasks 0-1: Exited with exit code 143", &node, &what));
  EXPECT_EQ(what, "tasks 0-1: Exited with exit code 143");
  EXPECT_FALSE(ParseSrunTaskError("srun: Job step aborted", &node, &what));
}

}  // namespace
}  // namespace hvd::launcher
