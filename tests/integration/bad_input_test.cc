// The bad-input table, end to end: every bad command line, host list, host
// file and config file makes horovodrun exit 2 with one line naming the bad
// value, and start nothing.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace hvd::testing {
namespace {

struct Case {
  std::vector<std::string> args;  // "@name" is replaced by the file's path
  std::map<std::string, std::string> files;
  std::string says;
  std::vector<std::string> env = {};
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {{"prog"}, {}, "-np: is required"},
      {{"-np", "2"}, {}, "command: missing"},
      {{"-np"}, {}, "-np: needs a value"},
      {{"-np", "0", "prog"}, {}, "-np: must be between 1"},
      {{"-np", "two", "prog"}, {}, "'two'"},
      {{"-np", "1", "--bogus", "prog"}, {}, "--bogus: unknown option"},
      {{"-np", "1", "--verbose=yes", "prog"}, {}, "--verbose: takes no value"},
      {{"-np", "1", "--start-timeout", "0", "prog"}, {}, "--start-timeout"},
      {{"-np", "5", "-H", "localhost:4", "prog"},
       {},
       "needs 5 slots but -H localhost:4 has 4"},
      {{"-np", "1", "-H", "a:-1", "prog"}, {}, "-H slots of 'a'"},
      {{"-np", "1", "-H", "a:0", "prog"},
       {},
       "needs 1 slots but no host has a slot (-H a:0)"},
      {{"-np", "1", "-H", "a:1,,b:1", "prog"}, {}, "empty entry"},
      {{"-np", "1", "-H", "::1:2", "prog"}, {}, "[ADDR]:SLOTS"},
      {{"-np", "1", "-H", "a:1,a:2", "prog"}, {}, "'a' is listed twice"},
      {{"-np", "1", "-H", "a:x", "prog"}, {}, "'x'"},
      {{"-np", "1", "--mpi", "--gloo", "prog"},
       {},
       "--mpi: conflicts with --gloo"},
      {{"-np", "1", "--mpi", "no-such-program-hvd"}, {}, "not found on PATH"},
      {{"-np", "1", "--mpi-args", "-x A", "prog"},
       {},
       "--mpi-args: is for mpirun"},
      {{"-np", "1", "--launcher-cmd", "ssh", "prog"},
       {},
       "must name the host as {host}"},
      {{"-np", "1", "--launcher", "srun", "prog"},
       {},
       "SLURM_JOB_ID is not set"},
      {{"-np", "1", "--fusion-threshold-mb", "-1", "prog"},
       {},
       "--fusion-threshold-mb"},
      {{"-np", "1", "--cycle-time-ms", "fast", "prog"}, {}, "'fast'"},
      {{"-np", "1", "--cache-capacity", "-5", "prog"}, {}, "--cache-capacity"},
      {{"-np", "1", "--autotune-gaussian-process-noise", "1.5", "prog"},
       {},
       "--autotune-gaussian-process-noise"},
      {{"-np", "1", "--autotune-steps-per-sample", "0", "prog"},
       {},
       "--autotune-steps-per-sample"},
      {{"-np", "1", "--log-level", "LOUD", "prog"}, {}, "'LOUD'"},
      {{"-np", "1", "--ssh-host-key-check", "maybe", "prog"}, {}, "'maybe'"},
      {{"-np", "1", "-p", "70000", "prog"},
       {},
       "-p: must be between 1 and 65535"},
      {{"-np", "1", "--thread-affinity", "0,x", "prog"},
       {},
       "--thread-affinity"},
      {{"-np", "1", "--gloo-timeout-seconds", "0", "prog"},
       {},
       "--gloo-timeout-seconds"},
      {{"-np", "1", "--hierarchical-allreduce", "--no-hierarchical-allreduce",
        "prog"},
       {},
       "--no-hierarchical-allreduce: conflicts with --hierarchical-allreduce"},
      {{"-np", "1", "--stall-check-warning-time-seconds", "60",
        "--stall-check-shutdown-time-seconds", "30", "prog"},
       {},
       "shorter than the warning time 60"},
      {{"-np", "1", "--network-interface", "nosuchif0", "true"},
       {},
       "nosuchif0"},
      {{"-np", "1", "-H", "a:1", "--hostfile", "@h", "prog"},
       {{"h", "a slots=1\n"}},
       "not both"},
      {{"-np", "1", "--hostfile", "/nonexistent/hosts", "prog"},
       {},
       "'/nonexistent/hosts'"},
      {{"-np", "1", "--hostfile", "@h", "prog"},
       {{"h", "a slots=x\n"}},
       ":1 slots"},
      {{"-np", "1", "--hostfile", "@h", "prog"},
       {{"h", "a slots=2\nb cpus=3\n"}},
       ":2: unknown field 'cpus=3'"},
      {{"-np", "1", "--hostfile", "@h", "prog"},
       {{"h", "a:2\n"}},
       "write 'host slots=N'"},
      {{"-np", "1", "--hostfile", "@h", "prog"},
       {{"h", "# nothing\n"}},
       "lists no hosts"},
      {{"-np", "1", "--hostfile", "@h", "prog"},
       {{"h", "a slots=1\na slots=2\n"}},
       "'a' is listed twice"},
      {{"-np", "1", "prog"},
       {},
       "neither SLURM_TASKS_PER_NODE nor SLURM_JOB_CPUS_PER_NODE is",
       {"SLURM_JOB_NODELIST=n[1-2]"}},
      {{"-np", "1", "prog"},
       {},
       "1 task counts for 2 nodes",
       {"SLURM_JOB_NODELIST=n[1-2]", "SLURM_TASKS_PER_NODE=1"}},
      {{"-np", "1", "prog"},
       {},
       "bad range '3-1'",
       {"SLURM_JOB_NODELIST=n[3-1]", "SLURM_TASKS_PER_NODE=1"}},
      {{"-np", "1", "--config-file", "@c", "prog"},
       {{"c", "params: [1, 2]\n"}},
       "params: must be a mapping"},
      {{"-np", "1", "--config-file", "@c", "prog"},
       {{"c", "params:\n  cycle_time_ms: soon\n"}},
       "params.cycle_time_ms"},
      {{"-np", "1", "--config-file", "@c", "prog"},
       {{"c", "autotune:\n  enabled: perhaps\n"}},
       "autotune.enabled"},
      {{"-np", "1", "--config-file", "@c", "prog"},
       {{"c", "logging: {level: [a\n"}},
       "not valid YAML"},
      {{"-np", "1", "--config-file", "/nonexistent/c.yaml", "prog"},
       {},
       "'/nonexistent/c.yaml'"},
      {{"-np", "1", "--rendezvous-token-file", "/t", "prog"},
       {},
       "need --rendezvous-addr"},
      {{"-np", "1", "--rendezvous-addr", "h:1", "prog"},
       {},
       "needs --rendezvous-token-file"},
      {{"-np", "1", "--rendezvous-addr", "nohost", "prog"},
       {},
       "--rendezvous-addr"},
      {{"-np", "1", "no-such-program-hvd"},
       {},
       "'no-such-program-hvd': not found on PATH"},
      {{"-np", "1", "true"},
       {},
       "HOROVOD_START_TIMEOUT",
       {"HOROVOD_START_TIMEOUT=soon"}},
  };
  return cases;
}

TEST(BadInputTest, EveryBadValueIsAUsageErrorNamingIt) {
  ASSERT_GE(Cases().size(), 30u);
  for (const Case& c : Cases()) {
    TempDir dir;
    std::vector<std::string> argv = {HVD_HOROVODRUN};
    for (const std::string& a : c.args) {
      argv.push_back(a.rfind('@', 0) == 0 ? dir.path() + "/" + a.substr(1) : a);
    }
    for (const auto& [name, content] : c.files) dir.Write(name, content);
    Result r = RunCommand(argv, std::chrono::seconds(30), c.env);
    std::string what = c.says + " (args:";
    for (const std::string& a : c.args) what += " " + a;
    what += ")";
    EXPECT_EQ(r.exit_code, 2) << what << "\n" << r.err;
    auto lines = Lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << what << "\n" << r.err;
    EXPECT_EQ(lines[0].rfind("horovodrun: ", 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find(c.says), std::string::npos)
        << what << "\ngot: " << lines[0];
    EXPECT_TRUE(r.out.empty()) << what << "\n" << r.out;
  }
}

}  // namespace
}  // namespace hvd::testing
