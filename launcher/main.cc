// horovodrun: parse, plan, start the rendezvous, spawn, supervise.
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "common/files.h"
#include "launcher/cli.h"
#include "launcher/job_rendezvous.h"
#include "launcher/local_host.h"
#include "launcher/plan.h"
#include "launcher/spawner.h"
#include "launcher/supervisor.h"

extern char** environ;

namespace hvd::launcher {
namespace {

// CLI errors: one line, exit 2, nothing started.
constexpr int kUsageError = 2;

int Fail(const Status& s, int code) {
  std::fprintf(stderr, "horovodrun: %s\n", s.message().c_str());
  return code;
}

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::map<std::string, std::string> env = Environment();
  auto options = ParseCommandLine(args, env, ReadWholeFile);
  if (!options.ok()) return Fail(options.status(), kUsageError);
  if (options->show_help) {
    std::fputs(HelpText().c_str(), stdout);
    return 0;
  }
  if (options->show_version) {
    std::puts(VersionText().c_str());
    return 0;
  }
  if (options->check_build) {
    std::fputs(CheckBuildText().c_str(), stdout);
    return 0;
  }
  HostFacts facts{IsLocalHost, CountLocalGpus()};
  auto plan = MakePlan(*options, facts);
  if (!plan.ok()) return Fail(plan.status(), kUsageError);
  auto env_path = env.find("PATH");
  auto program = ResolveProgram(plan->command[0],
                                env_path == env.end() ? "" : env_path->second);
  if (!program.ok()) return Fail(program.status(), kUsageError);

  InstallLauncherSignalHandlers();

  auto rendezvous = options->rendezvous_addr.empty()
                        ? StartEmbeddedRendezvous(*plan)
                        : ConnectRendezvousDaemon(*plan, *options);
  if (!rendezvous.ok()) return Fail(rendezvous.status(), 1);
  const JobAccess& access = (*rendezvous)->access();
  if (plan->verbose) {
    std::fprintf(stderr, "horovodrun: rendezvous on %s, job %s, %zu workers\n",
                 access.rendezvous_addr.c_str(), access.job_id.c_str(),
                 plan->workers.size());
  }

  char cwd[4096];
  std::string cwd_str = getcwd(cwd, sizeof(cwd)) ? cwd : "";
  std::vector<ProcessSpec> specs;
  std::vector<std::string> hosts;
  for (const WorkerPlan& w : plan->workers) {
    specs.push_back(
        {plan->command, WorkerEnvironment(env, *plan, w, access), cwd_str});
    hosts.push_back(w.host);
  }

  SupervisorOptions sup;
  sup.start_timeout = std::chrono::seconds(plan->start_timeout_s);
  sup.verbose = plan->verbose;
  sup.timestamps = options->prefix_output_with_timestamp;
  sup.output_dir = options->output_filename;
  JobRendezvous* job = rendezvous->get();
  sup.joined_ranks = [job] { return job->JoinedRanks(); };
  auto spawner = MakeLocalSpawner();
  int code = Supervisor(sup).Run(specs, hosts, *spawner);
  job->End("the job finished with exit status " + std::to_string(code));
  return code;
}

}  // namespace
}  // namespace hvd::launcher

int main(int argc, char** argv) { return hvd::launcher::Main(argc, argv); }
