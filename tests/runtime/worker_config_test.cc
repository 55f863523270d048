#include "runtime/worker_config.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "common/worker_env.h"
#include "runtime/affinity.h"

namespace hvd::runtime {
namespace {

// A row's default as the table writes it (in the flag's unit), read apart
// from the typed accessors the code uses.
int64_t RowDefault(std::string_view key) {
  return std::stoll(settings::Get(key).default_value);
}

// Tests pass the worker's environment as a map (no setenv): what the
// process itself has does not leak in.
using Env = settings::EnvMap;

TEST(WorkerConfigTest, NoLauncherMeansStandalone) {
  Env env;
  auto c = WorkerConfig::FromEnv(env);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->launched);
}

TEST(WorkerConfigTest, SizeWithoutRendezvousIsAnError) {
  Env env;
  env["HOROVOD_SIZE"] = "4";
  auto c = WorkerConfig::FromEnv(env);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("start the job with horovodrun"),
            std::string::npos);
}

TEST(WorkerConfigTest, LaunchedReadsEverything) {
  Env env;
  env["HVD_RENDEZVOUS_ADDR"] = "127.0.0.1:1";
  env["HVD_JOB_ID"] = "j";
  env["HVD_JOB_TOKEN"] = "t";
  env["HVD_HOST"] = "h";
  env["HVD_SLOT"] = "2";
  env["HOROVOD_GLOO_TIMEOUT_SECONDS"] = "7";
  env["HVD_JOIN_TIMEOUT"] = "90";
  env["HOROVOD_DISABLE_GROUP_FUSION"] = "1";
  env["HOROVOD_NUM_NCCL_STREAMS"] = "4";
  auto c = WorkerConfig::FromEnv(env);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->launched);
  EXPECT_EQ(c->slot, 2);
  EXPECT_EQ(c->gloo_timeout, std::chrono::seconds(7));
  EXPECT_EQ(c->join_timeout, std::chrono::seconds(90));
  EXPECT_TRUE(c->engine.disable_group_fusion);
  EXPECT_EQ(c->num_nccl_streams, 4);
  EXPECT_FALSE(c->expected.has_value());
}

// Every variable declared for libhvd (common/worker_env.h) is read: each
// row sets one to a value of its own and finds it in the config, and the
// rows cover the declared variables exactly (tests/launcher/plan_test.cc
// checks the launcher's side).
TEST(WorkerConfigTest, EveryDeclaredVariableForLibhvdIsRead) {
  namespace we = worker_env;
  const Env launched = {{we::kRendezvousAddr, "127.0.0.1:1"},
                        {we::kJobId, "j"},
                        {we::kJobToken, "t"},
                        {we::kHost, "h"},
                        {we::kSlot, "0"}};
  // The four Horovod place variables come together: libhvd checks them
  // as one assignment.
  const Env place = {{we::kRank, "5"},      {we::kSize, "8"},
                     {we::kLocalRank, "1"}, {we::kLocalSize, "2"},
                     {we::kCrossRank, "2"}, {we::kCrossSize, "4"}};
  struct Row {
    std::vector<std::string> vars;
    Env set;  // over `launched`
    std::vector<std::string> unset;
    std::function<bool(const WorkerConfig&)> seen;
  };
  const std::vector<Row> rows = {
      {{we::kRendezvousAddr},
       {{we::kRendezvousAddr, "10.1.2.3:7"}},
       {},
       [](auto& c) { return c.launched && c.rendezvous_addr == "10.1.2.3:7"; }},
      {{we::kJobId},
       {{we::kJobId, "job-x"}},
       {},
       [](auto& c) { return c.job_id == "job-x"; }},
      {{we::kJobToken},
       {{we::kJobToken, "tok-x"}},
       {},
       [](auto& c) { return c.job_token == "tok-x"; }},
      {{we::kTlsCa},
       {{we::kTlsCa, "CA"}},
       {},
       [](auto& c) { return c.tls_ca_pem == "CA"; }},
      {{we::kTlsCert},
       {{we::kTlsCert, "CERT"}},
       {},
       [](auto& c) { return c.tls_cert_pem == "CERT"; }},
      {{we::kTlsKey},
       {{we::kTlsKey, "KEY"}},
       {},
       [](auto& c) { return c.tls_key_pem == "KEY"; }},
      {{we::kHost},
       {{we::kHost, "host-x"}},
       {},
       [](auto& c) { return c.host == "host-x"; }},
      {{we::kSlot},
       {{we::kSlot, "3"}},
       {},
       [](auto& c) { return c.slot == 3; }},
      {{we::kGlooAddr},
       {{we::kGlooAddr, "10.4.4.4"}},
       {},
       [](auto& c) { return c.gloo_addr == "10.4.4.4"; }},
      {{we::kMetricsIntervalMs},
       {{we::kMetricsIntervalMs, "250"}},
       {},
       [](auto& c) {
         return c.metrics_interval == std::chrono::milliseconds(250);
       }},
      {{we::kTaskHosts},
       {{we::kTaskHosts, "a:1,b:2"},
        {"OMPI_COMM_WORLD_RANK", "2"},
        {"OMPI_COMM_WORLD_SIZE", "3"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}},
       {we::kHost, we::kSlot},
       [](auto& c) { return c.host == "b" && c.slot == 1; }},
      {{we::kRank, we::kSize, we::kLocalRank, we::kLocalSize, we::kCrossRank,
        we::kCrossSize},
       place,
       {},
       [](auto& c) {
         return c.expected && c.expected->rank == 5 && c.expected->size == 8 &&
                c.expected->local_rank == 1 && c.expected->local_size == 2 &&
                c.expected->cross_rank == 2 && c.expected->cross_size == 4;
       }},
  };
  std::set<std::string> covered;
  for (const Row& row : rows) {
    Env env = launched;
    for (const auto& [k, v] : row.set) env[k] = v;
    for (const std::string& k : row.unset) env.erase(k);
    auto c = WorkerConfig::FromEnv(env);
    ASSERT_TRUE(c.ok()) << row.vars[0] << ": " << c.status().ToString();
    EXPECT_TRUE(row.seen(*c)) << row.vars[0] << " was not read";
    covered.insert(row.vars.begin(), row.vars.end());
  }
  std::set<std::string> declared;
  for (const we::Var& v : we::kAll) {
    if (v.reader == we::Reader::kLibhvd) declared.insert(v.name);
  }
  EXPECT_EQ(covered, declared);
}

// Started by mpirun (horovodrun --mpi): the worker's place comes from
// OMPI_COMM_WORLD_RANK and the plan's hosts, checked against mpirun's own
// size and local rank; Gloo listens where the host reaches the launcher.
TEST(WorkerConfigTest, MpirunTaskIsPlacedByItsRank) {
  Env env;
  env["HVD_RENDEZVOUS_ADDR"] = "127.0.0.1:1";
  env["HVD_JOB_ID"] = "j";
  env["HVD_JOB_TOKEN"] = "t";
  env["HVD_TASK_HOSTS"] = "a:2,b:2";
  env["OMPI_COMM_WORLD_RANK"] = "3";
  env["OMPI_COMM_WORLD_SIZE"] = "4";
  env["OMPI_COMM_WORLD_LOCAL_RANK"] = "1";
  auto c = WorkerConfig::FromEnv(env);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->host, "b");
  EXPECT_EQ(c->slot, 1);
  EXPECT_EQ(c->gloo_addr, "127.0.0.1");
  env["HVD_GLOO_ADDR"] = "10.9.9.9";  // given: kept
  c = WorkerConfig::FromEnv(env);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->gloo_addr, "10.9.9.9");
  env["OMPI_COMM_WORLD_LOCAL_RANK"] = "0";
  c = WorkerConfig::FromEnv(env);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(
                "mpirun gave OMPI_COMM_WORLD_LOCAL_RANK=0 but horovodrun "
                "planned rank 3 as slot 1 of b"),
            std::string::npos)
      << c.status().message();
  env["OMPI_COMM_WORLD_LOCAL_RANK"] = "1";
  env["OMPI_COMM_WORLD_RANK"] = "4";
  c = WorkerConfig::FromEnv(env);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("is past the job's 4 workers"),
            std::string::npos)
      << c.status().message();
}

// HVD_GLOO_ADDR=auto (horovodrun --launcher-cmd, hosts it cannot
// resolve): Gloo listens on the address that reaches the rendezvous.
TEST(WorkerConfigTest, AutoGlooAddressReachesTheRendezvous) {
  Env env;
  env["HVD_RENDEZVOUS_ADDR"] = "127.0.0.1:1";
  env["HVD_JOB_ID"] = "j";
  env["HVD_JOB_TOKEN"] = "t";
  env["HVD_HOST"] = "pod-1";
  env["HVD_SLOT"] = "0";
  env["HVD_GLOO_ADDR"] = "auto";
  auto c = WorkerConfig::FromEnv(env);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->gloo_addr, "127.0.0.1");
}

TEST(WorkerConfigTest, MissingOrBadVariablesAreNamed) {
  Env env;
  env["HVD_RENDEZVOUS_ADDR"] = "127.0.0.1:1";
  auto c = WorkerConfig::FromEnv(env);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("HVD_JOB_ID"), std::string::npos);
  env["HVD_JOB_ID"] = "j";
  env["HVD_JOB_TOKEN"] = "t";
  env["HVD_HOST"] = "h";
  env["HVD_SLOT"] = "x";
  c = WorkerConfig::FromEnv(env);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("HVD_SLOT"), std::string::npos);
  env["HVD_SLOT"] = "0";
  env["HOROVOD_GLOO_TIMEOUT_SECONDS"] = "0";
  EXPECT_FALSE(WorkerConfig::FromEnv(env).ok());
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
  Env env;
  auto c = WorkerConfig::FromEnv(env);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->shm);
  EXPECT_FALSE(c->hierarchical_allreduce.has_value());  // automatic
  EXPECT_FALSE(c->engine.autotune);
  env["HOROVOD_SHM_DISABLE"] = "1";
  env["HOROVOD_HIERARCHICAL_ALLREDUCE"] = "1";
  env["HOROVOD_AUTOTUNE"] = "1";
  env["HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE"] = "7";
  env["HOROVOD_CYCLE_TIME"] = "5";
  env["HVD_AUTOTUNE_START"] = "2,40";
  c = WorkerConfig::FromEnv(env);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->shm);
  EXPECT_EQ(c->hierarchical_allreduce, std::optional<bool>(true));
  EXPECT_FALSE(c->hierarchical_allgather.has_value());
  EXPECT_TRUE(c->engine.autotune);
  EXPECT_EQ(c->engine.tune.steps_per_sample, 7);
  EXPECT_TRUE(c->engine.tune.fixed_cycle);
  EXPECT_FALSE(c->engine.tune.fixed_fusion);
  EXPECT_EQ(c->engine.fusion_threshold_bytes,
            2u << 20);  // the start, not pinned
  // Bad values name the variable.
  env["HOROVOD_SHM_DISABLE"] = "banana";
  c = WorkerConfig::FromEnv(env);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().ToString().find("HOROVOD_SHM_DISABLE"),
            std::string::npos);
  env.erase("HOROVOD_SHM_DISABLE");
  env["HVD_AUTOTUNE_START"] = "fast";
  c = WorkerConfig::FromEnv(env);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().ToString().find("HVD_AUTOTUNE_START"),
            std::string::npos);
}

// The autotune starting point moves what is not given, never what is.
TEST(WorkerConfigTest, ExplicitValuesWinOverTheAutotuneStart) {
  Env env = {{"HOROVOD_AUTOTUNE", "1"}, {"HVD_AUTOTUNE_START", "2,40"}};
  auto c = WorkerConfig::FromEnv(env);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->engine.fusion_threshold_bytes, 2u << 20);
  EXPECT_EQ(c->engine.cycle_time, std::chrono::milliseconds(40));
  // Whichever order a map or an environment lists them in.
  env["HOROVOD_FUSION_THRESHOLD"] = std::to_string(8 << 20);
  c = WorkerConfig::FromEnv(env);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->engine.fusion_threshold_bytes, 8u << 20);
  EXPECT_TRUE(c->engine.tune.fixed_fusion);
  EXPECT_EQ(c->engine.cycle_time, std::chrono::milliseconds(40));
  EXPECT_FALSE(c->engine.tune.fixed_cycle);
  env["HOROVOD_CYCLE_TIME"] = "3.5";
  c = WorkerConfig::FromEnv(env);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->engine.fusion_threshold_bytes, 8u << 20);
  EXPECT_EQ(c->engine.cycle_time, std::chrono::microseconds(3500));
  EXPECT_TRUE(c->engine.tune.fixed_cycle);
}

// Unset variables take the settings table's defaults, in the variable's
// unit (the fusion threshold in bytes), and the table's ranges apply.
TEST(WorkerConfigTest, DefaultsAndRangesComeFromTheSettingsTable) {
  auto c = WorkerConfig::FromEnv({});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->engine.fusion_threshold_bytes,
            size_t(RowDefault("fusion_threshold_mb")) << 20);
  EXPECT_EQ(c->start_timeout,
            std::chrono::seconds(RowDefault("start_timeout")));
  EXPECT_EQ(c->gloo_timeout,
            std::chrono::seconds(RowDefault("gloo_timeout_seconds")));
  EXPECT_EQ(c->engine.cache_capacity, size_t(RowDefault("cache_capacity")));
  EXPECT_EQ(
      c->engine.stall.warning,
      std::chrono::seconds(RowDefault("stall_check_warning_time_seconds")));
  EXPECT_EQ(c->engine.tune.noise, 0.8);
  EXPECT_EQ(c->engine.cycle_time, std::chrono::microseconds(0));
  EXPECT_TRUE(c->engine.stall.check);
  const int64_t max_cache = settings::Get("cache_capacity").max;
  c = WorkerConfig::FromEnv(
      {{"HOROVOD_CACHE_CAPACITY", std::to_string(max_cache + 1)}});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().ToString().find("HOROVOD_CACHE_CAPACITY"),
            std::string::npos);
  // An empty variable counts as unset.
  c = WorkerConfig::FromEnv({{"HOROVOD_FUSION_THRESHOLD", ""}});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->engine.tune.fixed_fusion);
}

TEST(WorkerConfigTest, SharedMemoryGivenExplicitlyIsPinned) {
  Env env;
  auto c = WorkerConfig::FromEnv(env);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->shm);
  EXPECT_FALSE(c->shm_given);
  env["HOROVOD_SHM_DISABLE"] = "0";
  c = WorkerConfig::FromEnv(env);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->shm);
  EXPECT_TRUE(c->shm_given);
}

TEST(WorkerConfigTest, BindingAndThreadAffinity) {
  Env env;
  auto c = WorkerConfig::FromEnv(env);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->bind.has_value());  // chosen by the data path
  EXPECT_TRUE(c->thread_affinity.empty());
  env["HVD_BIND_TO"] = "NONE";
  env["HOROVOD_THREAD_AFFINITY"] = "3,0,12";
  c = WorkerConfig::FromEnv(env);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->bind, false);
  EXPECT_EQ(c->thread_affinity, (std::vector<int>{3, 0, 12}));
  env["HVD_BIND_TO"] = "socket";
  c = WorkerConfig::FromEnv(env);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().ToString().find("HVD_BIND_TO"), std::string::npos);
  EXPECT_NE(c.status().ToString().find("'socket'"), std::string::npos);
  env["HVD_BIND_TO"] = "core";
  for (const char* bad : {"0,x", "1,", "-1", "0;1"}) {
    env["HOROVOD_THREAD_AFFINITY"] = bad;
    c = WorkerConfig::FromEnv(env);
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
