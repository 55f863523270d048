// horovodrun: parse, plan, start the rendezvous, spawn, supervise.
#include <unistd.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "common/random.h"
#include "launcher/cli.h"
#include "launcher/local_host.h"
#include "launcher/plan.h"
#include "launcher/spawner.h"
#include "launcher/supervisor.h"
#include "rendezvous/server.h"

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
  auto options = ParseCommandLine(args, env);
  if (!options.ok()) return Fail(options.status(), kUsageError);
  if (options->show_help) {
    std::fputs(HelpText().c_str(), stdout);
    return 0;
  }
  if (options->show_version) {
    std::puts(VersionText().c_str());
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

  auto admin = RandomHex(32);
  if (!admin.ok()) return Fail(admin.status(), 1);
  rendezvous::ServerOptions server_options;
  // Every host is local in this version, so the rendezvous never needs to be
  // reachable from another machine.
  server_options.listen = "127.0.0.1:0";
  server_options.admin_token = *admin;
  auto server = rendezvous::RendezvousServer::Start(server_options);
  if (!server.ok()) return Fail(server.status(), 1);
  auto job = (*server)->table().CreateJob(
      plan->hosts, static_cast<int>(plan->workers.size()));
  if (!job.ok()) return Fail(job.status(), 1);
  if (plan->verbose) {
    std::fprintf(stderr, "horovodrun: rendezvous on %s, job %s, %zu workers\n",
                 (*server)->address().c_str(), job->job_id.c_str(),
                 plan->workers.size());
  }

  char cwd[4096];
  std::string cwd_str = getcwd(cwd, sizeof(cwd)) ? cwd : "";
  JobAccess access{(*server)->address(), job->job_id, job->token};
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
  rendezvous::JobTable* table = &(*server)->table();
  std::string job_id = job->job_id;
  sup.joined_ranks = [table, job_id] {
    auto joined = table->JoinedRanks(job_id);
    return joined.ok() ? *joined : std::vector<int>{};
  };
  auto spawner = MakeLocalSpawner();
  int code = Supervisor(sup).Run(specs, hosts, *spawner);
  (*server)->Shutdown();
  return code;
}

}  // namespace
}  // namespace hvd::launcher

int main(int argc, char** argv) { return hvd::launcher::Main(argc, argv); }
