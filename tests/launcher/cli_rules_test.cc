// The command line's phases: the flag keys code names, and the rules
// between flags (Validate) and those that need bound values (Bind).
#include <gtest/gtest.h>

#include <set>

#include "launcher/cli.h"
#include "launcher/flags.h"
#include "tests/launcher/parse_command_line.h"

namespace hvd::launcher {
namespace {

// Every key:: constant, through which code names a flag, is a key of the
// table; a misspelled one would not compile, and one the table lost fails
// here.
TEST(FlagKeyTest, EveryConstantIsAKeyOfTheTable) {
  std::set<std::string> names;
  for (FlagKey k : kAllFlagKeys) {
    EXPECT_NE(FindFlagByKey(k.name()), nullptr) << k.name();
    EXPECT_TRUE(names.insert(k.name()).second) << k.name() << " listed twice";
  }
}

// The rules between flags (Validate) and those that need bound values
// (Bind), one row each: the command line, the environment, and the error's
// "flag: words".
TEST(CliPhasesTest, RulesBetweenFlagsNameTheFlagToChange) {
  const std::map<std::string, std::string> slurm = {
      {"SLURM_JOB_ID", "7"},
      {"SLURM_JOB_NODELIST", "n[1-2]"},
      {"SLURM_TASKS_PER_NODE", "2(x2)"}};
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string says;
  } cases[] = {
      {{"-np", "2", "--reset-limit", "3", "p"},
       {},
       "--reset-limit: is for elastic jobs"},
      {{"-np", "2", "--min-np", "3", "--max-np", "2", "p"},
       {},
       "--min-np 3: is more than --max-np 2"},
      {{"-np", "2", "--min-np", "1", "--slots-per-host", "2", "-H", "a:2", "p"},
       {},
       "--slots-per-host: is the slots of hosts"},
      {{"--max-np", "4", "p"},
       {},
       "-np: is required: the number of processes to start with"},
      {{"-np", "2", "--min-np", "3", "-H", "a:4", "p"},
       {},
       "--min-np 3: is more than -np 2"},
      {{"-np", "4", "--max-np", "2", "-H", "a:4", "p"},
       {},
       "--max-np 2: is less than -np 4"},
      {{"-np", "2", "-H", "a:2", "--hostfile", "f", "p"},
       {},
       "-H: give -H or --hostfile, not both"},
      {{"-np", "2", "--host-discovery-script", "d", "-H", "a:2", "p"},
       {},
       "--host-discovery-script: gives the hosts; drop -H"},
      {{"-np", "2", "--mpi", "--launcher", "ssh", "p"},
       {},
       "--mpi: conflicts with --launcher"},
      {{"-np", "2", "--mpi", "--min-np", "1", "-H", "a:2", "p"},
       {},
       "--mpi: an elastic job starts and stops workers"},
      {{"-np", "2", "--mpi-args", "-x A", "p"},
       {},
       "--mpi-args: is for mpirun; give --mpi too"},
      {{"-np", "2", "--launcher-cmd", "kubectl exec", "p"},
       {},
       "--launcher-cmd: must name the host as {host}"},
      {{"-np", "2", "--mpi", "--launcher-cmd", "x {host}", "p"},
       {},
       "--launcher-cmd: conflicts with --mpi"},
      {{"-np", "2", "--launcher-cmd", "x {host}", "p"},
       slurm,
       "--launcher-cmd: conflicts with --launcher srun"},
      {{"-np", "2", "--launcher", "srun", "p"},
       {},
       "--launcher srun: starts workers in a Slurm allocation"},
      {{"-np", "2", "--launcher", "srun", "--min-np", "1", "p"},
       slurm,
       "--launcher srun: an elastic job starts and stops workers"},
      {{"-np", "2", "--mpi", "-H", "u@a:2", "p"},
       {},
       "--mpi: mpirun's -H takes no user (u@a)"},
      {{"-np", "2", "--rendezvous-tls-ca", "c", "p"},
       {},
       "--rendezvous-*: these options need --rendezvous-addr"},
      {{"-np", "2", "--rendezvous-addr", "h:1", "p"},
       {},
       "--rendezvous-addr: needs --rendezvous-token-file"},
      {{"-np", "2", "--rendezvous-addr", "h:1,", "--rendezvous-token-file", "t",
        "p"},
       {},
       "--rendezvous-addr: 'h:1,' lists an empty address"},
      {{"-np", "2", "--rendezvous-addr", "h:1,g", "--rendezvous-token-file",
        "t", "p"},
       {},
       "--rendezvous-addr: expected HOST:PORT"},
      {{"-np", "2", "--monitor-interval", "5", "p"},
       {},
       "--monitor-interval: is for --monitor"},
      {{"-np", "2", "--rendezvous-addr", "h:1", "--rendezvous-token-file", "t",
        "--rendezvous-tls-cert", "c", "p"},
       {},
       "--rendezvous-tls-cert/--rendezvous-tls-key: give both or neither"},
      {{"-np", "2", "--rendezvous-addr", "h:1", "--rendezvous-token-file", "t",
        "--rendezvous-tls-cert", "c", "--rendezvous-tls-key", "k", "p"},
       {},
       "--rendezvous-tls-cert: needs --rendezvous-tls-ca"},
      {{"-np", "2", "--rendezvous-addr", "h:1", "--rendezvous-token-file", "t",
        "--monitor", "p"},
       {},
       "--monitor: the workers' metrics reach horovodrun"},
      {{"-np", "2", "--rendezvous-addr", "h:1", "--rendezvous-token-file", "t",
        "p"},
       {{"HOROVOD_METRICS_PORT", "9100"}},
       "--metrics-port: the workers' metrics reach horovodrun"},
      {{"-np", "2", "--stall-check-warning-time-seconds", "60",
        "--stall-check-shutdown-time-seconds", "30", "p"},
       {},
       "--stall-check-shutdown-time-seconds: 30 is shorter than the warning "
       "time 60"},
  };
  for (const Case& c : cases) {
    auto o = Parse(c.args, c.env);
    std::string line;
    for (const std::string& a : c.args) line += a + " ";
    ASSERT_FALSE(o.ok()) << line;
    EXPECT_NE(o.status().ToString().find(c.says), std::string::npos)
        << line << "\n  said: " << o.status().ToString()
        << "\n  wanted: " << c.says;
  }
  // Inside an allocation, an elastic job's workers start over SSH.
  auto o = Parse({"-np", "2", "--min-np", "1", "p"}, slurm);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->launcher, Launcher::kSsh);
  // Several daemons: the list as given, for every client.
  auto daemons = Parse({"-np", "2", "--rendezvous-addr", "a:1,[::1]:2",
                        "--rendezvous-token-file", "t", "p"},
                       {});
  ASSERT_TRUE(daemons.ok()) << daemons.status().ToString();
  EXPECT_EQ(daemons->rendezvous_addr, "a:1,[::1]:2");
  // An elastic job's memberships go to the daemon as well.
  auto elastic =
      Parse({"-np", "2", "--min-np", "1", "-H", "a:2", "--rendezvous-addr",
             "h:1", "--rendezvous-token-file", "t", "p"},
            {});
  ASSERT_TRUE(elastic.ok()) << elastic.status().ToString();
  EXPECT_TRUE(elastic->elastic.enabled);
  EXPECT_EQ(elastic->rendezvous_addr, "h:1");
}

}  // namespace
}  // namespace hvd::launcher
