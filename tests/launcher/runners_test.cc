// The runners alone: which one a command line gets, what each checks
// before anything starts, and what it would start where. Nothing is
// spawned; the srun and mpirun they find are stand-ins on PATH.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <typeinfo>

#include "common/worker_env.h"
#include "launcher/runners/elastic.h"
#include "launcher/runners/local_ssh.h"
#include "launcher/runners/mpirun.h"
#include "launcher/runners/runner.h"
#include "launcher/runners/srun.h"
#include "launcher/runners/template.h"
#include "tests/launcher/parse_command_line.h"
#include "tests/util/temp_dir.h"

namespace hvd::launcher {
namespace {

using testing::TempDir;

// A folder for PATH holding stand-ins for `programs` (never run here).
std::string FakePath(const TempDir& dir, std::vector<std::string> programs) {
  for (const std::string& p : programs)
    dir.Write(p, "#!/bin/sh\nexit 0\n", 0755);
  return dir.path();
}

RunnerContext Context(std::vector<std::string> args,
                      std::map<std::string, std::string> env) {
  auto options = Parse(args, env);
  EXPECT_TRUE(options.ok()) << options.status().message();
  return RunnerContext{options.ok() ? *options : LaunchOptions{}, env,
                       "/nonexistent/helpers"};
}

std::string RunnerName(const Runner& r) {
  if (typeid(r) == typeid(LocalSshRunner)) return "local_ssh";
  if (typeid(r) == typeid(TemplateRunner)) return "template";
  if (typeid(r) == typeid(SrunRunner)) return "srun";
  if (typeid(r) == typeid(MpirunRunner)) return "mpirun";
  if (typeid(r) == typeid(ElasticRunner)) return "elastic";
  return "?";
}

TEST(ChooseRunnerTest, OneRunnerPerWayOfStartingWorkers) {
  TempDir with_srun;
  const std::string srun_path = FakePath(with_srun, {"srun"});
  const std::map<std::string, std::string> allocation = {
      {"SLURM_JOB_ID", "7"},
      {"SLURM_JOB_NODELIST", "localhost"},
      {"SLURM_TASKS_PER_NODE", "2"}};
  auto in_allocation = [&](std::string path) {
    auto env = allocation;
    env["PATH"] = path;
    return env;
  };
  struct Row {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string runner;
  } rows[] = {
      {{"-np", "2", "true"}, {}, "local_ssh"},
      {{"-np", "2", "-H", "localhost:2", "true"}, {}, "local_ssh"},
      {{"-np", "2", "--launcher-cmd", "sh -c {host}", "true"}, {}, "template"},
      {{"--mpi", "-np", "2", "true"}, {}, "mpirun"},
      {{"--min-np", "1", "-np", "2", "-H", "localhost:2", "true"},
       {},
       "elastic"},
      // srun when the allocation's PATH has it; SSH when it has not.
      {{"-np", "2", "true"}, in_allocation(srun_path), "srun"},
      {{"-np", "2", "true"}, in_allocation("/nonexistent"), "local_ssh"},
      // Asked for by name, srun it is: its Prepare says it is missing.
      {{"--launcher", "srun", "-np", "2", "true"},
       in_allocation("/nonexistent"),
       "srun"},
      {{"--launcher", "ssh", "-np", "2", "true"},
       in_allocation(srun_path),
       "local_ssh"},
  };
  for (const Row& row : rows) {
    std::string line;
    for (const std::string& a : row.args) line += a + " ";
    RunnerContext context = Context(row.args, row.env);
    EXPECT_EQ(RunnerName(*ChooseRunner(context)), row.runner) << line;
  }
}

TEST(RunnerPrepareTest, MissingProgramsAreUsageErrorsNamingTheFlag) {
  TempDir empty;
  struct Row {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string error;
  } rows[] = {
      {{"--mpi", "-np", "2", "/bin/true"},
       {{"PATH", empty.path()}},
       "--mpi: mpirun is not on PATH (install OpenMPI: openmpi-bin)"},
      {{"--launcher", "srun", "-np", "2", "/bin/true"},
       {{"PATH", empty.path()}, {"SLURM_JOB_ID", "7"}},
       "--launcher srun: srun is not on PATH"},
      {{"-np", "2", "no-such-program-hvd"},
       {{"PATH", empty.path()}},
       "no-such-program-hvd"},
  };
  for (const Row& row : rows) {
    RunnerContext context = Context(row.args, row.env);
    std::unique_ptr<Runner> runner = ChooseRunner(context);
    Status s = runner->Prepare();
    ASSERT_FALSE(s.ok()) << row.error;
    EXPECT_NE(s.code(), StatusCode::kUnavailable) << s.message();
    EXPECT_NE(s.message().find(row.error), std::string::npos) << s.message();
  }
}

TEST(LocalSshRunnerTest, LocalWorkersAreTheCommandItself) {
  RunnerContext context =
      Context({"-np", "2", "--join-timeout", "9", "/bin/echo", "hi"}, {});
  LocalSshRunner runner(context);
  ASSERT_TRUE(runner.Prepare().ok());
  auto job = runner.OpenRendezvous();
  ASSERT_TRUE(job.ok()) << job.status().message();
  auto launch = runner.Workers(**job);
  ASSERT_TRUE(launch.ok()) << launch.status().message();
  ASSERT_EQ(launch->processes.size(), 2u);
  for (const ProcessSpec& p : launch->processes) {
    EXPECT_EQ(p.argv, (std::vector<std::string>{"/bin/echo", "hi"}));
  }
  EXPECT_EQ(launch->hosts,
            (std::vector<std::string>{"localhost", "localhost"}));
  EXPECT_FALSE(launch->step);
  EXPECT_EQ(launch->driver, nullptr);
  EXPECT_EQ(launch->size, 2);
  EXPECT_EQ(launch->join_timeout, std::chrono::seconds(9));
  (*job)->End("test over");
}

// What a step runner hands the supervisor: one process, the step's hosts
// per rank, and the format that tells its tasks apart.
void ExpectOneStep(const Launch& launch, const std::string& starter,
                   const std::string& program, const std::string& format) {
  ASSERT_EQ(launch.processes.size(), 1u);
  EXPECT_EQ(launch.processes[0].argv.at(0), starter);
  EXPECT_EQ(launch.hosts, (std::vector<std::string>{program}));
  ASSERT_TRUE(launch.step);
  EXPECT_EQ(launch.step->hosts,
            (std::vector<std::string>{"localhost", "localhost", "localhost"}));
  EXPECT_EQ(launch.step->format->name(), format);
  EXPECT_EQ(launch.size, 3);
  bool task_hosts = false;
  for (const std::string& kv : launch.processes[0].env) {
    task_hosts |= kv.rfind(std::string(worker_env::kTaskHosts) + "=", 0) == 0;
  }
  EXPECT_TRUE(task_hosts) << "the step's workers find their place by task";
}

TEST(StepRunnerTest, MpirunStartsOneProcessForEveryWorker) {
  TempDir bin;
  RunnerContext context = Context({"--mpi", "-np", "3", "/bin/true"},
                                  {{"PATH", FakePath(bin, {"mpirun"})}});
  MpirunRunner runner(context);
  ASSERT_TRUE(runner.Prepare().ok());
  auto job = runner.OpenRendezvous();
  ASSERT_TRUE(job.ok()) << job.status().message();
  auto launch = runner.Workers(**job);
  ASSERT_TRUE(launch.ok()) << launch.status().message();
  ExpectOneStep(*launch, bin.path() + "/mpirun", "mpirun", "mpirun");
  (*job)->End("test over");
}

TEST(StepRunnerTest, SrunPlacesTasksByAHostfileItRemovesAtTheEnd) {
  TempDir bin;
  RunnerContext context =
      Context({"--launcher", "srun", "-np", "3", "/bin/true"},
              {{"PATH", FakePath(bin, {"srun"})}, {"SLURM_JOB_ID", "7"}});
  std::string hostfile;
  {
    SrunRunner runner(context);
    ASSERT_TRUE(runner.Prepare().ok());
    auto job = runner.OpenRendezvous();
    ASSERT_TRUE(job.ok()) << job.status().message();
    auto launch = runner.Workers(**job);
    ASSERT_TRUE(launch.ok()) << launch.status().message();
    ExpectOneStep(*launch, bin.path() + "/srun", "srun", "the srun step");
    for (const std::string& kv : launch->processes[0].env) {
      if (kv.rfind("SLURM_HOSTFILE=", 0) == 0) hostfile = kv.substr(15);
    }
    ASSERT_FALSE(hostfile.empty());
    std::ifstream in(hostfile);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), "localhost\nlocalhost\nlocalhost\n");
    (*job)->End("test over");
  }
  EXPECT_NE(access(hostfile.c_str(), F_OK), 0) << hostfile << " was left";
}

TEST(ElasticRunnerTest, TheDriverStartsTheWorkers) {
  RunnerContext context = Context(
      {"--min-np", "1", "-np", "2", "-H", "localhost:2", "/bin/true"}, {});
  ElasticRunner runner(context);
  ASSERT_TRUE(runner.Prepare().ok());
  auto job = runner.OpenRendezvous();
  ASSERT_TRUE(job.ok()) << job.status().message();
  auto launch = runner.Workers(**job);
  ASSERT_TRUE(launch.ok()) << launch.status().message();
  EXPECT_NE(launch->driver, nullptr);
  EXPECT_TRUE(launch->processes.empty());
  EXPECT_FALSE(launch->step);
  EXPECT_EQ(launch->size, 2);
  (*job)->End("test over");
}

}  // namespace
}  // namespace hvd::launcher
