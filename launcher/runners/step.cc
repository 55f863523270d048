#include "launcher/runners/step.h"

#include <cstdio>

#include "common/local_address.h"
#include "launcher/local_host.h"

namespace hvd::launcher {

Status StepRunner::Prepare() {
  HVD_ASSIGN_OR_RETURN(
      plan_, MakePlan(context_.options, {IsLocalHost, CountLocalGpus()}));
  HVD_ASSIGN_OR_RETURN(starter_, FindStarter());
  HVD_ASSIGN_OR_RETURN(us_, AddressForWorkers());
  return Status::Ok();
}

StatusOr<std::string> StepRunner::AddressForWorkers() {
  if (!context_.options.network_interfaces.empty()) {
    return InterfaceAddressOf(context_.options);
  }
  if (plan_.all_local) return std::string();
  const std::string host = plan_.hosts.front().host;
  const std::string addr = HostAddress(host);
  auto us = addr.empty() ? StatusOr<std::string>(Status::NotFound(host, ""))
                         : LocalAddressToward(addr);
  if (!us.ok()) {
    return Status::NotFound(flag(), "cannot tell how host " + host +
                                        " reaches this machine; give "
                                        "--network-interface");
  }
  return us;
}

StatusOr<std::unique_ptr<JobRendezvous>> StepRunner::OpenRendezvous() {
  return StartEmbeddedRendezvous(plan_);
}

StatusOr<Launch> StepRunner::Workers(JobRendezvous& job) {
  const JobAccess& access = job.access();
  std::vector<HostSpec> hosts;  // in rank order
  for (const rendezvous::HostSlots& h : plan_.hosts) {
    hosts.push_back({h.host, h.slots, ""});
  }
  // The job-wide variables; each worker's own come from its task index.
  const std::string rendezvous_addr =
      us_.empty()
          ? access.rendezvous_addr
          : (us_.find(':') != std::string::npos ? "[" + us_ + "]" : us_) + ":" +
                std::to_string(RendezvousPort(access));
  std::vector<std::string> step_env = StepEnvironment(
      WorkerEnvironment(context_.env, plan_, plan_.workers.front(), access),
      rendezvous_addr, plan_.all_local, FormatHostList(hosts));
  HVD_ASSIGN_OR_RETURN(std::vector<std::string> argv,
                       StarterArgv(hosts, step_env));
  if (plan_.verbose) {
    std::fprintf(stderr,
                 "horovodrun: rendezvous on %s, job %s, %zu workers %s\n",
                 access.rendezvous_addr.c_str(), access.job_id.c_str(),
                 plan_.workers.size(), how().c_str());
  }
  Launch launch;
  launch.processes = {{argv, step_env, WorkingDirectory()}};
  launch.hosts = {program()};
  TaskStep step;
  for (const WorkerPlan& w : plan_.workers) step.hosts.push_back(w.host);
  step.format = Format();
  launch.step = std::move(step);
  launch.size = static_cast<int>(plan_.workers.size());
  launch.join_timeout = std::chrono::seconds(plan_.join_timeout_s);
  return launch;
}

}  // namespace hvd::launcher
