#include "launcher/cli.h"

#include <gtest/gtest.h>

#include "tests/launcher/parse_command_line.h"

namespace hvd::launcher {
namespace {

TEST(CliTest, MinimalCommandDefaultsToLocalhost) {
  auto o = Parse({"-np", "4", "./train", "--lr", "0.1"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->num_proc, 4);
  EXPECT_EQ(o->hosts, (std::vector<HostSpec>{{"localhost", 4, ""}}));
  EXPECT_EQ(o->command, (std::vector<std::string>{"./train", "--lr", "0.1"}));
  EXPECT_EQ(o->start_timeout_s, 30);
  EXPECT_FALSE(o->verbose);
}

TEST(CliTest, AllFlagsOfThisVersion) {
  auto o = Parse({"--num-proc=2", "-H", "a:1,b:1", "--gloo", "--start-timeout",
                  "5", "--verbose", "prog"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->num_proc, 2);
  EXPECT_EQ(o->hosts.size(), 2u);
  EXPECT_EQ(o->start_timeout_s, 5);
  EXPECT_TRUE(o->verbose);
}

TEST(CliTest, OptionsStopAtTheCommandOrDoubleDash) {
  auto o = Parse({"-np", "1", "--", "--verbose"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->command, std::vector<std::string>{"--verbose"});
  EXPECT_FALSE(o->verbose);
  o = Parse({"-np", "1", "prog", "--verbose"});
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->verbose);
}

TEST(CliTest, HelpAndVersion) {
  EXPECT_TRUE(Parse({"--help"})->show_help);
  EXPECT_TRUE(Parse({"-h"})->show_help);
  EXPECT_TRUE(Parse({"--version"})->show_version);
  EXPECT_NE(HelpText().find("-np"), std::string::npos);
}

TEST(CliTest, ErrorsNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    const char* says;
  } cases[] = {
      {{"prog"}, "-np: is required"},
      {{"-np", "2"}, "command: missing"},
      {{"-np"}, "-np: needs a value"},
      {{"-np", "0", "p"}, "-np: must be between 1"},
      {{"-np", "two", "p"}, "expected an integer"},
      {{"-np", "1", "--bogus", "p"}, "--bogus: unknown option"},
      {{"-np", "1", "--verbose=yes", "p"}, "takes no value"},
      {{"-np", "1", "--start-timeout", "0", "p"}, "--start-timeout"},
      {{"-np", "1", "-H", "a:-1", "p"}, "-H slots"},
      {{"-np", "1", "--mpi", "--gloo", "p"}, "--mpi: conflicts with --gloo"},
      {{"-np", "2", "--min-np", "1", "p"},
       "--min-np/--max-np: an elastic job needs its hosts: give "
       "--host-discovery-script, or -H or --hostfile"},
      {{"--host-discovery-script=d.sh", "p"},
       "-np: is required: the number of processes to start with (or give "
       "--min-np)"},
      {{"-np", "2", "--min-np", "3", "-H", "a:4", "p"},
       "--min-np 3: is more than -np 2"},
      {{"-np", "2", "--max-np", "1", "-H", "a:4", "p"},
       "--max-np 1: is less than -np 2"},
      {{"-np", "2", "--reset-limit", "3", "p"},
       "--reset-limit: is for elastic jobs; give --host-discovery-script or "
       "--min-np/--max-np too, or drop it"},
      {{"-np", "2", "--elastic-timeout", "3", "p"},
       "--elastic-timeout: is for elastic jobs"},
      {{"-np", "2", "--min-np", "1", "-H", "a:2", "--slots-per-host", "2", "p"},
       "--slots-per-host: is the slots of hosts the discovery script prints"},
      {{"-np", "2", "--host-discovery-script", "d.sh", "-H", "a:2", "p"},
       "--host-discovery-script: gives the hosts; drop -H"},
      {{"-np", "2", "--min-np", "1", "-H", "a:2", "--blacklist-cooldown-range",
        "9", "5", "p"},
       "--blacklist-cooldown-range: MIN 9 is more than MAX 5"},
      {{"-np", "2", "--min-np", "1", "-H", "a:2", "--blacklist-cooldown-range",
        "9", "x", "p"},
       "--blacklist-cooldown-range MAX"},
      // Horovod's bounds: at least 1 s, at most an hour.
      {{"-np", "2", "--min-np", "1", "-H", "a:2", "--blacklist-cooldown-range",
        "0", "5", "p"},
       "--blacklist-cooldown-range MIN: must be between 1 and 3600"},
      {{"-np", "2", "--min-np", "1", "-H", "a:2", "--blacklist-cooldown-range",
        "9", "3601", "p"},
       "--blacklist-cooldown-range MAX: must be between 1 and 3600"},
      {{"-np", "2", "--min-np", "1", "-H", "a:2",
        "--blacklist-cooldown-range=9", "p"},
       "takes two numbers of seconds, MIN MAX (got '9')"},
      {{"-np", "2", "--min-np", "1", "-H", "a:2", "--blacklist-cooldown-range",
        "9"},
       "--blacklist-cooldown-range: needs 2 values (MIN MAX)"},
  };
  for (const Case& c : cases) {
    auto o = Parse(c.args);
    ASSERT_FALSE(o.ok()) << c.says;
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(o.status().message().find(c.says), std::string::npos)
        << o.status().message();
  }
}

}  // namespace
}  // namespace hvd::launcher

namespace hvd::launcher {
namespace {

std::map<std::string, std::string> Env(
    const std::vector<std::string>& args,
    std::map<std::string, std::string> files = {}) {
  std::vector<std::string> full = args;
  full.push_back("prog");
  auto o = Parse(full, {}, files);
  EXPECT_TRUE(o.ok()) << o.status().ToString();
  return o.ok() ? o->worker_env : std::map<std::string, std::string>{};
}

TEST(CliTuningTest, FlagsBecomeHorovodVariables) {
  auto env = Env({"-np",
                  "2",
                  "--fusion-threshold-mb",
                  "32",
                  "--cycle-time-ms",
                  "2.5",
                  "--cache-capacity",
                  "512",
                  "--hierarchical-allreduce",
                  "--no-hierarchical-allgather",
                  "--autotune",
                  "--autotune-log-file",
                  "/tmp/at.csv",
                  "--autotune-warmup-samples",
                  "2",
                  "--autotune-steps-per-sample",
                  "5",
                  "--autotune-bayes-opt-max-samples",
                  "9",
                  "--autotune-gaussian-process-noise",
                  "0.5",
                  "--timeline-filename",
                  "/tmp/tl.json",
                  "--timeline-mark-cycles",
                  "--stall-check-warning-time-seconds",
                  "20",
                  "--stall-check-shutdown-time-seconds",
                  "40",
                  "--gloo-timeout-seconds",
                  "12",
                  "--num-nccl-streams",
                  "2",
                  "--thread-affinity",
                  "0,4",
                  "--bind-to",
                  "none",
                  "--log-level",
                  "debug",
                  "--log-without-timestamp",
                  "--network-interface",
                  "eth1"});
  std::map<std::string, std::string> want = {
      {"HOROVOD_FUSION_THRESHOLD", std::to_string(32 << 20)},
      {"HOROVOD_CYCLE_TIME", "2.5"},
      {"HOROVOD_CACHE_CAPACITY", "512"},
      {"HOROVOD_HIERARCHICAL_ALLREDUCE", "1"},
      {"HOROVOD_HIERARCHICAL_ALLGATHER", "0"},
      {"HOROVOD_AUTOTUNE", "1"},
      {"HOROVOD_AUTOTUNE_LOG", "/tmp/at.csv"},
      {"HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "2"},
      {"HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "5"},
      {"HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "9"},
      {"HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "0.5"},
      {"HOROVOD_TIMELINE", "/tmp/tl.json"},
      {"HOROVOD_TIMELINE_MARK_CYCLES", "1"},
      {"HOROVOD_STALL_CHECK_TIME_SECONDS", "20"},
      {"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "40"},
      {"HOROVOD_GLOO_TIMEOUT_SECONDS", "12"},
      {"HOROVOD_NUM_NCCL_STREAMS", "2"},
      {"HOROVOD_THREAD_AFFINITY", "0,4"},
      {"HVD_BIND_TO", "NONE"},
      {"HOROVOD_LOG_LEVEL", "DEBUG"},
      {"HOROVOD_LOG_HIDE_TIME", "1"},
      {"HOROVOD_GLOO_IFACE", "eth1"},
      {"NCCL_SOCKET_IFNAME", "eth1"},
  };
  EXPECT_EQ(env, want);
}

TEST(CliTuningTest, OnlyGivenValuesAreSet) {
  EXPECT_TRUE(Env({"-np", "2"}).empty());
  auto env = Env({"-np", "2", "--no-stall-check"});
  EXPECT_EQ(env, (std::map<std::string, std::string>{
                     {"HOROVOD_STALL_CHECK_DISABLE", "1"}}));
}

// Horovod 0.28's command lines, each with the worker variables it must
// give (what Horovod's own launcher tests check, in our words).
TEST(CliHorovodCompatTest, HorovodsFlagsGiveHorovodsVariables) {
  struct Case {
    std::vector<std::string> flags;
    std::map<std::string, std::string> env;
  };
  const std::vector<Case> cases = {
      {{"--tcp"}, {{"NCCL_IB_DISABLE", "1"}}},
      {{"--network-interfaces", "eth0,eth1"},
       {{"HOROVOD_GLOO_IFACE", "eth0"}, {"NCCL_SOCKET_IFNAME", "eth0,eth1"}}},
      {{"--network-interface", "eth0", "--network-interface", "eth1"},
       {{"HOROVOD_GLOO_IFACE", "eth0"}, {"NCCL_SOCKET_IFNAME", "eth0,eth1"}}},
      {{"--no-autotune"}, {{"HOROVOD_AUTOTUNE", "0"}}},
      {{"--stall-check"}, {{"HOROVOD_STALL_CHECK_DISABLE", "0"}}},
      {{"--no-timeline-mark-cycles"}, {{"HOROVOD_TIMELINE_MARK_CYCLES", "0"}}},
      {{"--log-with-timestamp"}, {{"HOROVOD_LOG_HIDE_TIME", "0"}}},
      {{"--log-hide-timestamp"}, {{"HOROVOD_LOG_HIDE_TIME", "1"}}},
      {{"--no-log-hide-timestamp"}, {{"HOROVOD_LOG_HIDE_TIME", "0"}}},
      {{"--no-hierarchical-allgather"},
       {{"HOROVOD_HIERARCHICAL_ALLGATHER", "0"}}},
      // argparse's abbreviations of long flags.
      {{"--fusion-thresh", "10"}, {{"HOROVOD_FUSION_THRESHOLD", "10485760"}}},
      {{"--cycle-time=5"}, {{"HOROVOD_CYCLE_TIME", "5"}}},
      // Meaningless for hvd: accepted, and nothing set.
      {{"--mpi-threads-disable"}, {}},
      {{"--no-mpi-threads-disable"}, {}},
      {{"--binding-args", "--rankfile f"}, {}},
      {{"--torus-allreduce"}, {}},
      {{"--no-torus-allreduce"}, {}},
      {{"--disable-cache"}, {}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"-np", "2"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    args.push_back("prog");
    auto o = Parse(args);
    ASSERT_TRUE(o.ok()) << c.flags[0] << ": " << o.status().ToString();
    EXPECT_EQ(o->worker_env, c.env) << c.flags[0];
    EXPECT_EQ(o->command, std::vector<std::string>{"prog"}) << c.flags[0];
  }
  // What is ignored is said (with --verbose), once, with why.
  auto o =
      Parse({"-np", "2", "--disable-cache", "--mpi-threads-disable", "prog"});
  ASSERT_TRUE(o.ok());
  ASSERT_EQ(o->notes.size(), 2u);
  EXPECT_NE(o->notes[0].find("--disable-cache ignored: hvd keeps no cache"),
            std::string::npos);
  EXPECT_NE(o->notes[1].find(
                "--mpi-threads-disable ignored: hvd's collectives run on Gloo"),
            std::string::npos);
  // Single-dash spellings.
  o = Parse({"-np", "2", "-hostfile", "/h", "-prefix-timestamp", "prog"}, {},
            {{"/h", "a slots=2\n"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->hosts, (std::vector<HostSpec>{{"a", 2, ""}}));
  EXPECT_TRUE(o->prefix_output_with_timestamp);
}

// Horovod's config files load unchanged: a top-level controller, keys hvd
// does not know (a warning each), and the command line wins either way.
TEST(CliHorovodCompatTest, HorovodConfigFilesLoad) {
  const std::string yaml = R"(
controller: gloo
params:
  hierarchical_allreduce: true
  hierarchical_allgather: false
  colour: blue
library_options:
  mpi_threads_disable: true
  num_nccl_streams: 2
newer_section:
  anything: 1
)";
  auto o =
      Parse({"-np", "2", "--config-file", "/c.yaml",
             "--no-hierarchical-allreduce", "--hierarchical-allgather", "prog"},
            {}, {{"/c.yaml", yaml}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->worker_env.at("HOROVOD_HIERARCHICAL_ALLREDUCE"), "0");
  EXPECT_EQ(o->worker_env.at("HOROVOD_HIERARCHICAL_ALLGATHER"), "1");
  EXPECT_EQ(o->worker_env.at("HOROVOD_NUM_NCCL_STREAMS"), "2");
  EXPECT_EQ(o->warnings.size(), 2u);
  EXPECT_NE(o->warnings[0].find("params.colour: unknown setting, ignored"),
            std::string::npos)
      << o->warnings[0];
  // Horovod's MPI controller: mpirun starts the workers, as --mpi.
  auto mpi = Parse({"-np", "2", "--config-file", "/c", "prog"}, {},
                   {{"/c", "controller: mpi\n"}});
  ASSERT_TRUE(mpi.ok()) << mpi.status().ToString();
  EXPECT_EQ(mpi->launcher, Launcher::kMpirun);
}

// --mpi: mpirun starts the workers; --mpi-args are split as a shell would
// and go to mpirun; what mpirun cannot take is refused.
TEST(CliHorovodCompatTest, MpiAndItsArgs) {
  auto o = Parse({"-np", "2", "--mpi", "--mpi-args",
                  "-x 'A=two words' --mca btl \"tcp,self\" -x B=\\$x", "p"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->launcher, Launcher::kMpirun);
  EXPECT_EQ(o->mpi_args,
            (std::vector<std::string>{"-x", "A=two words", "--mca", "btl",
                                      "tcp,self", "-x", "B=$x"}));
  o = Parse({"-np", "2", "--launcher-cmd", "kubectl exec -i {host} --", "p"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->launcher_cmd, "kubectl exec -i {host} --");
  for (auto [args, says] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"-np", "2", "--mpi-args", "-x A", "p"},
            "--mpi-args: is for mpirun; give --mpi too"},
           {{"-np", "2", "--mpi", "--mpi-args", "-x 'A", "p"},
            "--mpi-args: has an unterminated ' quote"},
           {{"-np", "2", "--mpi", "-H", "bob@a:2", "p"},
            "--mpi: mpirun's -H takes no user (bob@a)"},
           {{"-np", "2", "--mpi", "--launcher", "ssh", "p"},
            "--mpi: conflicts with --launcher"},
           {{"-np", "2", "--mpi", "--min-np", "1", "-H", "a:2", "p"},
            "--mpi: an elastic job starts and stops workers"},
           {{"-np", "2", "--launcher-cmd", "kubectl exec -i pod --", "p"},
            "--launcher-cmd: must name the host as {host}"},
           {{"-np", "2", "--mpi", "--launcher-cmd", "docker exec -i {host}",
             "p"},
            "--launcher-cmd: conflicts with --mpi"}}) {
    auto bad = Parse(args);
    ASSERT_FALSE(bad.ok()) << says;
    EXPECT_NE(bad.status().message().find(says), std::string::npos)
        << bad.status().message();
  }
}

TEST(CliConfigTest, YamlSectionsAndFlagsWin) {
  std::string yaml = R"(
params:
  fusion_threshold_mb: 64
  cycle_time_ms: 3
  cache_capacity: 100
  hierarchical_allreduce: false
autotune:
  enabled: true
  warmup_samples: 1
timeline:
  filename: /tmp/t.json
  mark_cycles: true
stall_check:
  enabled: false
  warning_time_seconds: 10
library_options:
  gloo_timeout_seconds: 9
logging:
  level: info
  with_timestamp: false
)";
  auto env =
      Env({"-np", "2", "--config-file", "/c.yaml", "--cycle-time-ms", "7"},
          {{"/c.yaml", yaml}});
  EXPECT_EQ(env.at("HOROVOD_FUSION_THRESHOLD"), std::to_string(64 << 20));
  EXPECT_EQ(env.at("HOROVOD_CYCLE_TIME"), "7");  // the flag wins
  EXPECT_EQ(env.at("HOROVOD_CACHE_CAPACITY"), "100");
  EXPECT_EQ(env.at("HOROVOD_HIERARCHICAL_ALLREDUCE"), "0");
  EXPECT_EQ(env.at("HOROVOD_AUTOTUNE"), "1");
  EXPECT_EQ(env.at("HOROVOD_AUTOTUNE_WARMUP_SAMPLES"), "1");
  EXPECT_EQ(env.at("HOROVOD_TIMELINE"), "/tmp/t.json");
  EXPECT_EQ(env.at("HOROVOD_TIMELINE_MARK_CYCLES"), "1");
  EXPECT_EQ(env.at("HOROVOD_STALL_CHECK_DISABLE"), "1");
  EXPECT_EQ(env.at("HOROVOD_STALL_CHECK_TIME_SECONDS"), "10");
  EXPECT_EQ(env.at("HOROVOD_GLOO_TIMEOUT_SECONDS"), "9");
  EXPECT_EQ(env.at("HOROVOD_LOG_LEVEL"), "INFO");
  EXPECT_EQ(env.at("HOROVOD_LOG_HIDE_TIME"), "1");
}

// Horovod's elastic flags and their config keys, with its defaults: -np
// is what the job starts with and --min-np defaults to it.
TEST(CliElasticTest, FlagsAndConfigKeys) {
  auto o =
      Parse({"-np", "4", "--min-np", "2", "--max-np", "8",
             "--host-discovery-script", "./discover.sh", "--slots-per-host",
             "2", "--elastic-timeout", "60", "--reset-limit", "3",
             "--blacklist-cooldown-range", "10", "100", "train"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  const ElasticLaunchOptions& e = o->elastic;
  EXPECT_TRUE(e.enabled);
  EXPECT_EQ(o->num_proc, 4);
  EXPECT_EQ(e.min_np, 2);
  EXPECT_EQ(e.max_np, 8);
  EXPECT_EQ(e.discovery_script, "./discover.sh");
  EXPECT_EQ(e.slots_per_host, 2);
  EXPECT_EQ(e.timeout_s, 60);
  EXPECT_EQ(e.reset_limit, 3);
  EXPECT_EQ(e.cooldown_lo_s, 10);
  EXPECT_EQ(e.cooldown_hi_s, 100);
  EXPECT_TRUE(o->hosts.empty());
  // The workers wait as long to re-join.
  EXPECT_EQ(o->worker_env.at("HOROVOD_ELASTIC_TIMEOUT"), "60");
  EXPECT_EQ(o->command, std::vector<std::string>{"train"});

  // --min-np alone: -np follows it, the hosts are fixed; defaults.
  o = Parse({"--min-num-proc", "2", "-H", "a:2,b:2", "train"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->elastic.enabled);
  EXPECT_EQ(o->num_proc, 2);
  EXPECT_EQ(o->elastic.max_np, 0);
  EXPECT_EQ(o->elastic.timeout_s, 600);
  EXPECT_EQ(o->elastic.reset_limit, 0);
  EXPECT_EQ(o->elastic.cooldown_hi_s, 0);
  EXPECT_EQ(o->hosts.size(), 2u);

  // -np alone stays a fixed job.
  o = Parse({"-np", "2", "train"});
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->elastic.enabled);

  // The config file's elastic section, a list for the cooldown range; a
  // flag wins over it.
  o = Parse(
      {"-np", "3", "--config-file", "/c.yaml", "--reset-limit", "5", "train"},
      {},
      {{"/c.yaml",
        "elastic:\n  min_np: 2\n  max_np: 6\n  "
        "host_discovery_script: /d.sh\n  reset_limit: 1\n  "
        "elastic_timeout: 30\n  blacklist_cooldown_range: [5, 50]\n"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->elastic.min_np, 2);
  EXPECT_EQ(o->elastic.max_np, 6);
  EXPECT_EQ(o->elastic.discovery_script, "/d.sh");
  EXPECT_EQ(o->elastic.reset_limit, 5);
  EXPECT_EQ(o->elastic.timeout_s, 30);
  EXPECT_EQ(o->elastic.cooldown_lo_s, 5);
  EXPECT_EQ(o->elastic.cooldown_hi_s, 50);
}

TEST(CliHostsTest, HostfileAndSlurmAndUsers) {
  auto o = Parse(
      {"-np", "3", "--hostfile", "/h", "p"}, {},
      {{"/h", "# cluster\nnode1 slots=2\n\nnode2 slots=4 max_slots=8\n"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->hosts,
            (std::vector<HostSpec>{{"node1", 2, ""}, {"node2", 4, ""}}));
  o = Parse({"-np", "5", "p"}, {{"SLURM_JOB_NODELIST", "gpu[01-02],cpu7"},
                                {"SLURM_TASKS_PER_NODE", "2(x2),1"}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->hosts,
            (std::vector<HostSpec>{
                {"gpu01", 2, ""}, {"gpu02", 2, ""}, {"cpu7", 1, ""}}));
  EXPECT_EQ(o->launcher, Launcher::kSrun);  // the allocation's default
  EXPECT_FALSE(o->launcher_given);
  o = Parse({"-np", "1", "-H", "alice@node1:1", "p"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->hosts[0].user, "alice");
  EXPECT_EQ(o->hosts[0].host, "node1");
  EXPECT_EQ(o->launcher, Launcher::kSsh);
}

// --launcher: srun is the default in an allocation given no -H; ssh keeps
// SSH there; srun outside an allocation, or for an elastic job, is refused.
TEST(CliHostsTest, LauncherFlag) {
  const std::map<std::string, std::string> slurm = {
      {"SLURM_JOB_ID", "7"},
      {"SLURM_JOB_NODELIST", "n[1-2]"},
      {"SLURM_JOB_CPUS_PER_NODE", "4(x2)"}};
  auto o = Parse({"-np", "8", "--launcher", "ssh", "p"}, slurm);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->launcher, Launcher::kSsh);
  // Without SLURM_TASKS_PER_NODE, the CPUs per node.
  EXPECT_EQ(o->hosts, (std::vector<HostSpec>{{"n1", 4, ""}, {"n2", 4, ""}}));
  o = Parse({"-np", "2", "--launcher", "srun", "-H", "n1:2", "p"}, slurm);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->launcher, Launcher::kSrun);
  EXPECT_TRUE(o->launcher_given);
  o = Parse({"-np", "2", "--launcher", "srun", "p"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find(
                "--launcher srun: starts workers in a Slurm allocation, and "
                "SLURM_JOB_ID is not set"),
            std::string::npos)
      << o.status().message();
  o = Parse({"-np", "2", "--launcher", "rsh", "p"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("must be one of SSH, SRUN"),
            std::string::npos)
      << o.status().message();
  o = Parse({"-np", "2", "--min-np", "1", "--launcher", "srun", "p"}, slurm);
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("use --launcher ssh"), std::string::npos)
      << o.status().message();
  // An elastic job in an allocation starts its workers over SSH.
  o = Parse({"-np", "2", "--min-np", "1", "p"}, slurm);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->launcher, Launcher::kSsh);
}

TEST(CliSshTest, PortIdentityAndPolicy) {
  auto o = Parse({"-np", "1", "-p", "2222", "-i", "/k", "--ssh-host-key-check",
                  "strict", "p"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->ssh_port, 2222);
  EXPECT_EQ(o->ssh_identity_file, "/k");
  EXPECT_EQ(o->host_key_check, HostKeyCheck::kStrict);
  EXPECT_EQ(Parse({"-np", "1", "p"})->host_key_check, HostKeyCheck::kAcceptNew);
}

TEST(CliHelpTest, GroupedLikeHorovods) {
  std::string help = HelpText();
  for (const char* g : {"hosts:", "SSH:", "tuning:", "autotune:", "timeline:",
                        "stall check:", "library:", "logging and output:"}) {
    EXPECT_NE(help.find(g), std::string::npos) << g;
  }
  EXPECT_NE(help.find("--fusion-threshold-mb N"), std::string::npos);
  EXPECT_NE(CheckBuildText().find("[X] Gloo"), std::string::npos);
}

// -v and -cb print Horovod's text first, hvd's additions after.
TEST(CliHelpTest, VersionAndCheckBuildLeadWithHorovods) {
  EXPECT_EQ(VersionText().substr(0, VersionText().find('\n')), "0.28.1");
  const std::string cb = CheckBuildText();
  EXPECT_EQ(cb.rfind("Horovod v0.28.1:\n\nAvailable Frameworks:\n", 0), 0u)
      << cb;
  EXPECT_LT(cb.find("Available Tensor Operations:"), cb.find("hvd v"));
  EXPECT_NE(cb.find("[X] C++ (libhvd)"), std::string::npos);
}

}  // namespace
}  // namespace hvd::launcher
