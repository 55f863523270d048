#include "launcher/runners/runner.h"

#include <unistd.h>

#include <cstdio>
#include <memory>

#include "launcher/flight_dump.h"
#include "launcher/job_watch.h"
#include "launcher/local_host.h"
#include "launcher/say.h"
#include "rendezvous/flight_keys.h"

namespace hvd::launcher {
namespace {

// CLI errors: one line, exit 2, nothing started.
constexpr int kUsageError = 2;

// Says each line of `s` and returns `code`.
int Fail(const Status& s, int code) {
  SayLines(s.message());
  return code;
}

SupervisorOptions SupervisorFor(const RunnerContext& context,
                                JobRendezvous& job, const Launch& launch) {
  SupervisorOptions sup;
  sup.join_timeout = launch.join_timeout;
  sup.verbose = context.options.verbose;
  sup.timestamps = context.options.prefix_output_with_timestamp;
  sup.output_dir = context.options.output_filename;
  sup.watchdog = context.helpers + "/hvd-remote-exec";
  sup.job_id = job.access().job_id;
  if (launch.driver == nullptr) {
    JobRendezvous* j = &job;
    sup.joined_ranks = [j] { return j->JoinedRanks(); };
    sup.exited = [j](const std::string& host, int slot, int status) {
      j->RecordExit(host, slot, status);
    };
    sup.members = [j] { return j->Members(); };
  }
  JobRendezvous* rendezvous = &job;
  sup.dump_flight = [rendezvous] {
    return DumpFlightRecorders(*rendezvous, std::chrono::seconds(10),
                               "asked by SIGUSR1", /*only_in_flight=*/false);
  };
  // The survivors of a failed rank, when they wait in a collective: 2 s at
  // most, as they may be failing too.
  sup.dump_on_failure = [rendezvous](const std::string& who) {
    return DumpFlightRecorders(*rendezvous, std::chrono::seconds(2),
                               who + " failed", /*only_in_flight=*/true);
  };
  auto last_ask = std::make_shared<std::string>();
  sup.flight_asked = [rendezvous, last_ask](std::string* ends_job) {
    return AnswerFlightAsk(*rendezvous, last_ask.get(), ends_job);
  };
  sup.step = launch.step;
  return sup;
}

}  // namespace

int RunJob(Runner& runner, const RunnerContext& context) {
  if (Status s = runner.Prepare(); !s.ok()) {
    return Fail(s, s.code() == StatusCode::kUnavailable ? 1 : kUsageError);
  }
  InstallLauncherSignalHandlers();
  auto rendezvous = runner.OpenRendezvous();
  if (!rendezvous.ok()) return Fail(rendezvous.status(), 1);
  JobRendezvous& job = **rendezvous;
  // Workers wait for this launcher's report before a stall shutdown.
  (void)job.Set(rendezvous::kFlightAnswererKey, "horovodrun");
  auto launch = runner.Workers(job);
  if (!launch.ok()) return Fail(launch.status(), 1);
  Supervisor supervisor(SupervisorFor(context, job, *launch));
  auto watch = JobWatch::Start(context.options, &job, launch->size);
  if (!watch.ok()) return Fail(watch.status(), 1);
  auto spawner = MakeLocalSpawner();
  const int code =
      launch->driver != nullptr
          ? supervisor.RunElastic(*launch->driver, *spawner)
          : supervisor.Run(launch->processes, launch->hosts, *spawner);
  (*watch)->Finish();
  job.End("the job finished with exit status " + std::to_string(code));
  return code;
}

std::string RemoteExecPath(const RunnerContext& context) {
  auto it = context.env.find("HVD_REMOTE_EXEC");
  return it != context.env.end() ? it->second
                                 : context.helpers + "/hvd-remote-exec";
}

std::string WorkingDirectory() {
  char cwd[4096];
  return getcwd(cwd, sizeof(cwd)) ? cwd : "";
}

StatusOr<std::string> InterfaceAddressOf(const LaunchOptions& options) {
  if (options.network_interfaces.empty()) return std::string();
  return InterfaceAddress(options.network_interfaces.front());
}

StatusOr<std::string> FindProgram(const RunnerContext& context,
                                  const std::string& program) {
  auto path = context.env.find("PATH");
  return ResolveProgram(program, path == context.env.end() ? "" : path->second);
}

Status CheckLocalCommand(const RunnerContext& context, const LaunchPlan& plan) {
  for (const WorkerPlan& w : plan.workers) {
    if (w.local) return FindProgram(context, plan.command[0]).status();
  }
  return Status::Ok();
}

}  // namespace hvd::launcher
