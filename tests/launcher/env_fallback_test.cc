// Every horovodrun flag that Horovod lets an environment variable stand
// for, checked against Horovod's own list (its launcher's
// HOROVOD_START_TIMEOUT and HOROVOD_ELASTIC_TIMEOUT, and the variables its
// config_parser sets for the workers): with only the variable set, the job
// runs with the variable's value; with both, the flag wins.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "launcher/plan.h"
#include "tests/launcher/parse_command_line.h"

namespace hvd::launcher {
namespace {

// What a worker of the job started by `args` under `env` finds in its
// environment under `var` (nullopt: unset).
std::optional<std::string> WorkerSees(
    std::vector<std::string> args,
    const std::map<std::string, std::string>& env, const std::string& var) {
  auto o = Parse(args, env);
  EXPECT_TRUE(o.ok()) << o.status().ToString();
  if (!o.ok()) return std::nullopt;
  HostFacts local{[](const std::string&) { return true; }, 0};
  auto plan = MakePlan(*o, local);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (!plan.ok()) return std::nullopt;
  JobAccess access{"127.0.0.1:5000", "job", "token", "", "", ""};
  auto vars = WorkerEnvironment(env, *plan, plan->workers[0], access);
  const std::string prefix = var + "=";
  for (const std::string& kv : vars) {
    if (kv.rfind(prefix, 0) == 0) return kv.substr(prefix.size());
  }
  return std::nullopt;
}

struct WorkerRow {
  std::vector<std::string> flag;  // the flag and its value, if any
  std::string var;
  std::string var_value;  // set in horovodrun's environment
  // What the worker sees with the flag given too; nullopt where hvd
  // accepts the flag but it means nothing here (the variable passes on).
  std::optional<std::string> with_flag;
};

// Horovod's config_parser.set_env_from_args, row by row, plus --tcp's
// NCCL_IB_DISABLE and --network-interface's HOROVOD_GLOO_IFACE (its
// gloo_run).
const WorkerRow kWorkerRows[] = {
    {{"--fusion-threshold-mb", "32"},
     "HOROVOD_FUSION_THRESHOLD",
     "1048576",
     std::to_string(32 << 20)},
    {{"--cycle-time-ms", "2.5"}, "HOROVOD_CYCLE_TIME", "7", "2.5"},
    {{"--cache-capacity", "512"}, "HOROVOD_CACHE_CAPACITY", "64", "512"},
    {{"--hierarchical-allreduce"}, "HOROVOD_HIERARCHICAL_ALLREDUCE", "0", "1"},
    {{"--hierarchical-allgather"}, "HOROVOD_HIERARCHICAL_ALLGATHER", "0", "1"},
    {{"--torus-allreduce"}, "HOROVOD_TORUS_ALLREDUCE", "0", std::nullopt},
    {{"--autotune"}, "HOROVOD_AUTOTUNE", "0", "1"},
    {{"--autotune-log-file", "/tmp/a.csv"},
     "HOROVOD_AUTOTUNE_LOG",
     "/tmp/b.csv",
     "/tmp/a.csv"},
    {{"--autotune-warmup-samples", "2"},
     "HOROVOD_AUTOTUNE_WARMUP_SAMPLES",
     "5",
     "2"},
    {{"--autotune-steps-per-sample", "5"},
     "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE",
     "9",
     "5"},
    {{"--autotune-bayes-opt-max-samples", "9"},
     "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES",
     "20",
     "9"},
    {{"--autotune-gaussian-process-noise", "0.5"},
     "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE",
     "0.8",
     "0.5"},
    {{"--timeline-filename", "/tmp/t.json"},
     "HOROVOD_TIMELINE",
     "/tmp/u.json",
     "/tmp/t.json"},
    {{"--timeline-mark-cycles"}, "HOROVOD_TIMELINE_MARK_CYCLES", "0", "1"},
    {{"--no-stall-check"}, "HOROVOD_STALL_CHECK_DISABLE", "0", "1"},
    {{"--stall-check-warning-time-seconds", "20"},
     "HOROVOD_STALL_CHECK_TIME_SECONDS",
     "30",
     "20"},
    {{"--stall-check-shutdown-time-seconds", "40"},
     "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS",
     "90",
     "40"},
    {{"--mpi-threads-disable"},
     "HOROVOD_MPI_THREADS_DISABLE",
     "0",
     std::nullopt},
    {{"--num-nccl-streams", "2"}, "HOROVOD_NUM_NCCL_STREAMS", "3", "2"},
    {{"--thread-affinity", "0,4"}, "HOROVOD_THREAD_AFFINITY", "1,2", "0,4"},
    {{"--gloo-timeout-seconds", "12"},
     "HOROVOD_GLOO_TIMEOUT_SECONDS",
     "50",
     "12"},
    {{"--log-level", "debug"}, "HOROVOD_LOG_LEVEL", "INFO", "DEBUG"},
    {{"--log-hide-timestamp"}, "HOROVOD_LOG_HIDE_TIME", "0", "1"},
    {{"--tcp"}, "NCCL_IB_DISABLE", "0", "1"},
    {{"--network-interface", "eth1"}, "HOROVOD_GLOO_IFACE", "lo", "eth1"},
};

TEST(EnvFallbackTest, WorkersSeeTheVariableUnlessTheFlagIsGiven) {
  for (const WorkerRow& row : kWorkerRows) {
    SCOPED_TRACE(row.flag[0]);
    const std::map<std::string, std::string> env = {{row.var, row.var_value}};
    EXPECT_EQ(WorkerSees({"-np", "1", "prog"}, env, row.var), row.var_value);
    std::vector<std::string> args = {"-np", "1"};
    args.insert(args.end(), row.flag.begin(), row.flag.end());
    args.push_back("prog");
    EXPECT_EQ(WorkerSees(args, env, row.var),
              row.with_flag.value_or(row.var_value));
    if (row.with_flag) {  // and the flag alone
      EXPECT_EQ(WorkerSees(args, {}, row.var), row.with_flag);
    }
  }
}

// The flags the launcher itself reads, whose help in Horovod names the
// variable as the alternative.
struct LauncherRow {
  std::vector<std::string> args;  // a job the flag applies to
  std::string flag;
  std::string var;
  std::function<int(const LaunchOptions&)> value;
};

const LauncherRow kLauncherRows[] = {
    {{"-np", "1"},
     "--start-timeout",
     "HOROVOD_START_TIMEOUT",
     [](const LaunchOptions& o) { return o.start_timeout_s; }},
    {{"--min-np", "1", "-H", "localhost:2"},
     "--elastic-timeout",
     "HOROVOD_ELASTIC_TIMEOUT",
     [](const LaunchOptions& o) { return o.elastic.timeout_s; }},
};

TEST(EnvFallbackTest, TheLauncherReadsTheVariableUnlessTheFlagIsGiven) {
  for (const LauncherRow& row : kLauncherRows) {
    SCOPED_TRACE(row.flag);
    std::vector<std::string> plain = row.args, flagged = row.args;
    plain.push_back("prog");
    flagged.insert(flagged.end(), {row.flag, "9", "prog"});
    auto o = Parse(plain, {{row.var, "7"}});
    ASSERT_TRUE(o.ok()) << o.status().ToString();
    EXPECT_EQ(row.value(*o), 7);
    o = Parse(flagged, {{row.var, "7"}});
    ASSERT_TRUE(o.ok()) << o.status().ToString();
    EXPECT_EQ(row.value(*o), 9);
    o = Parse(plain, {{row.var, "soon"}});
    ASSERT_FALSE(o.ok());
    EXPECT_NE(o.status().ToString().find(row.var), std::string::npos);
  }
}

}  // namespace
}  // namespace hvd::launcher
