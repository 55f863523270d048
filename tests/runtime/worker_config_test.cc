#include "runtime/worker_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "runtime/affinity.h"

namespace hvd::runtime {
namespace {

class EnvGuard {
 public:
  EnvGuard() {
    for (const char* k : kKeys) unsetenv(k);
  }
  ~EnvGuard() {
    for (const char* k : kKeys) unsetenv(k);
  }
  static constexpr const char* kKeys[] = {"HVD_RENDEZVOUS_ADDR",
                                          "HVD_JOB_ID",
                                          "HVD_JOB_TOKEN",
                                          "HVD_HOST",
                                          "HVD_SLOT",
                                          "HOROVOD_RANK",
                                          "HOROVOD_SIZE",
                                          "HOROVOD_LOCAL_RANK",
                                          "HOROVOD_LOCAL_SIZE",
                                          "HOROVOD_CROSS_RANK",
                                          "HOROVOD_CROSS_SIZE",
                                          "HOROVOD_START_TIMEOUT",
                                          "HOROVOD_GLOO_TIMEOUT_SECONDS",
                                          "HOROVOD_GLOO_IFACE",
                                          "HVD_GLOO_ADDR",
                                          "HOROVOD_SHM_DISABLE",
                                          "HOROVOD_HIERARCHICAL_ALLREDUCE",
                                          "HOROVOD_HIERARCHICAL_ALLGATHER",
                                          "HOROVOD_AUTOTUNE",
                                          "HOROVOD_AUTOTUNE_LOG",
                                          "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE",
                                          "HOROVOD_FUSION_THRESHOLD",
                                          "HOROVOD_CYCLE_TIME",
                                          "HVD_AUTOTUNE_START",
                                          "HVD_BIND_TO",
                                          "HOROVOD_THREAD_AFFINITY"};
};

TEST(WorkerConfigTest, NoLauncherMeansStandalone) {
  EnvGuard g;
  auto c = WorkerConfig::FromEnv();
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->launched);
}

TEST(WorkerConfigTest, SizeWithoutRendezvousIsAnError) {
  EnvGuard g;
  setenv("HOROVOD_SIZE", "4", 1);
  auto c = WorkerConfig::FromEnv();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("start the job with horovodrun"),
            std::string::npos);
}

TEST(WorkerConfigTest, LaunchedReadsEverything) {
  EnvGuard g;
  setenv("HVD_RENDEZVOUS_ADDR", "127.0.0.1:1", 1);
  setenv("HVD_JOB_ID", "j", 1);
  setenv("HVD_JOB_TOKEN", "t", 1);
  setenv("HVD_HOST", "h", 1);
  setenv("HVD_SLOT", "2", 1);
  setenv("HOROVOD_GLOO_TIMEOUT_SECONDS", "7", 1);
  auto c = WorkerConfig::FromEnv();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->launched);
  EXPECT_EQ(c->slot, 2);
  EXPECT_EQ(c->gloo_timeout, std::chrono::seconds(7));
  EXPECT_FALSE(c->expected.has_value());
}

TEST(WorkerConfigTest, MissingOrBadVariablesAreNamed) {
  EnvGuard g;
  setenv("HVD_RENDEZVOUS_ADDR", "127.0.0.1:1", 1);
  auto c = WorkerConfig::FromEnv();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("HVD_JOB_ID"), std::string::npos);
  setenv("HVD_JOB_ID", "j", 1);
  setenv("HVD_JOB_TOKEN", "t", 1);
  setenv("HVD_HOST", "h", 1);
  setenv("HVD_SLOT", "x", 1);
  c = WorkerConfig::FromEnv();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("HVD_SLOT"), std::string::npos);
  setenv("HVD_SLOT", "0", 1);
  setenv("HOROVOD_GLOO_TIMEOUT_SECONDS", "0", 1);
  EXPECT_FALSE(WorkerConfig::FromEnv().ok());
}

TEST(WorkerConfigTest, AssignmentMismatchIsCaught) {
  WorkerConfig c;
  c.host = "h";
  c.expected = rendezvous::Assignment{1, 2, 1, 2, 0, 1, -1};
  EXPECT_TRUE(CheckAssignment(c, {1, 2, 1, 2, 0, 1, -1}).ok());
  Status s = CheckAssignment(c, {0, 2, 0, 2, 0, 1, -1});
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
}

TEST(WorkerConfigTest, SharedMemoryHierarchyAndAutotuneSettings) {
  EnvGuard g;
  auto c = WorkerConfig::FromEnv();
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->shm);
  EXPECT_FALSE(c->hierarchical_allreduce.has_value());  // automatic
  EXPECT_FALSE(c->autotune);
  setenv("HOROVOD_SHM_DISABLE", "1", 1);
  setenv("HOROVOD_HIERARCHICAL_ALLREDUCE", "1", 1);
  setenv("HOROVOD_AUTOTUNE", "1", 1);
  setenv("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "7", 1);
  setenv("HOROVOD_CYCLE_TIME", "5", 1);
  setenv("HVD_AUTOTUNE_START", "2,40", 1);
  c = WorkerConfig::FromEnv();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->shm);
  EXPECT_EQ(c->hierarchical_allreduce, std::optional<bool>(true));
  EXPECT_FALSE(c->hierarchical_allgather.has_value());
  EXPECT_TRUE(c->autotune);
  EXPECT_EQ(c->autotune_steps_per_sample, 7);
  EXPECT_TRUE(c->cycle_given);
  EXPECT_FALSE(c->fusion_given);
  EXPECT_EQ(c->fusion_threshold_bytes, 2u << 20);  // the start, not pinned
  // Bad values name the variable.
  setenv("HOROVOD_SHM_DISABLE", "banana", 1);
  c = WorkerConfig::FromEnv();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().ToString().find("HOROVOD_SHM_DISABLE"),
            std::string::npos);
  unsetenv("HOROVOD_SHM_DISABLE");
  setenv("HVD_AUTOTUNE_START", "fast", 1);
  c = WorkerConfig::FromEnv();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().ToString().find("HVD_AUTOTUNE_START"),
            std::string::npos);
}

TEST(WorkerConfigTest, SharedMemoryGivenExplicitlyIsPinned) {
  EnvGuard g;
  auto c = WorkerConfig::FromEnv();
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->shm);
  EXPECT_FALSE(c->shm_given);
  setenv("HOROVOD_SHM_DISABLE", "0", 1);
  c = WorkerConfig::FromEnv();
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->shm);
  EXPECT_TRUE(c->shm_given);
}

TEST(WorkerConfigTest, BindingAndThreadAffinity) {
  EnvGuard g;
  auto c = WorkerConfig::FromEnv();
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->bind.has_value());  // chosen by the data path
  EXPECT_TRUE(c->thread_affinity.empty());
  setenv("HVD_BIND_TO", "NONE", 1);
  setenv("HOROVOD_THREAD_AFFINITY", "3,0,12", 1);
  c = WorkerConfig::FromEnv();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->bind, false);
  EXPECT_EQ(c->thread_affinity, (std::vector<int>{3, 0, 12}));
  setenv("HVD_BIND_TO", "socket", 1);
  c = WorkerConfig::FromEnv();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().ToString().find("HVD_BIND_TO"), std::string::npos);
  EXPECT_NE(c.status().ToString().find("'socket'"), std::string::npos);
  setenv("HVD_BIND_TO", "core", 1);
  for (const char* bad : {"0,x", "1,", "-1", "0;1"}) {
    setenv("HOROVOD_THREAD_AFFINITY", bad, 1);
    c = WorkerConfig::FromEnv();
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(c.status().ToString().find("HOROVOD_THREAD_AFFINITY"),
              std::string::npos)
        << bad;
  }
}

TEST(AffinityTest, EqualContiguousBlocksOfTheAllowedCpus) {
  const std::vector<int> four = {0, 1, 2, 3};
  EXPECT_EQ(CpuBlock(four, 0, 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(CpuBlock(four, 1, 2), (std::vector<int>{2, 3}));
  EXPECT_EQ(CpuBlock(four, 0, 3), (std::vector<int>{0}));
  EXPECT_EQ(CpuBlock(four, 2, 3), (std::vector<int>{2, 3}));
  EXPECT_EQ(CpuBlock(four, 3, 4), (std::vector<int>{3}));
  // Whatever taskset left: blocks of the allowed list, not of 0..n-1.
  EXPECT_EQ(CpuBlock({2, 3, 6, 7}, 1, 2), (std::vector<int>{6, 7}));
  // More ranks than CPUs, or nonsense: no binding.
  EXPECT_TRUE(CpuBlock({0, 1}, 2, 3).empty());
  EXPECT_TRUE(CpuBlock(four, 2, 2).empty());
  // Every CPU in exactly one block.
  std::vector<int> many(10);
  for (int i = 0; i < 10; ++i) many[i] = 2 * i;
  for (int ranks = 1; ranks <= 10; ++ranks) {
    std::vector<int> seen;
    for (int r = 0; r < ranks; ++r) {
      auto b = CpuBlock(many, r, ranks);
      EXPECT_GE(b.size(), 10u / ranks);
      EXPECT_LE(b.size(), 10u / ranks + 1);
      seen.insert(seen.end(), b.begin(), b.end());
    }
    EXPECT_EQ(seen, many) << ranks;
  }
  EXPECT_EQ(CpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  auto own = AllowedCpus();
  ASSERT_TRUE(own.ok());
  EXPECT_FALSE(own->empty());
}

}  // namespace
}  // namespace hvd::runtime
