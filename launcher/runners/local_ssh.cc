#include "launcher/runners/local_ssh.h"

#include <algorithm>
#include <cstdio>

#include "launcher/local_host.h"
#include "launcher/say.h"

namespace hvd::launcher {
namespace {

// The plan's remote hosts, once each, in rank order.
std::vector<std::string> RemoteHosts(const LaunchPlan& plan) {
  std::vector<std::string> remote;
  for (const WorkerPlan& w : plan.workers) {
    if (!w.local &&
        std::find(remote.begin(), remote.end(), w.host) == remote.end()) {
      remote.push_back(w.host);
    }
  }
  return remote;
}

}  // namespace

Status LocalSshRunner::Prepare() {
  HVD_ASSIGN_OR_RETURN(
      plan_, MakePlan(context_.options, {IsLocalHost, CountLocalGpus()}));
  HVD_RETURN_IF_ERROR(CheckLocalCommand(context_, plan_));
  // --verbose says what it does in Horovod's words first (on stdout, as
  // its print()s), hvd's own lines after (on stderr).
  const std::vector<std::string> remote = RemoteHosts(plan_);
  if (plan_.verbose) {
    std::string names;
    for (const std::string& h : remote) names += (names.empty() ? "" : " ") + h;
    std::printf("Filtering local host names.\nRemote host found: %s\n",
                names.c_str());
    std::fflush(stdout);
  }
  HVD_ASSIGN_OR_RETURN(iface_address_, InterfaceAddressOf(context_.options));
  return LearnRoutes(remote);
}

Status LocalSshRunner::LearnRoutes(const std::vector<std::string>& remote) {
  if (plan_.verbose && !remote.empty()) {
    std::printf("Checking ssh on all remote hosts.\n");
    std::fflush(stdout);
  }
  // Every remote host is reached before anything starts; each failure is
  // one line naming the host.
  std::vector<std::string> host_errors;
  auto checked = CheckRemoteHosts(plan_, context_.options, &host_errors);
  if (!checked.ok()) {
    std::string lines;
    for (const std::string& e : host_errors) {
      lines += (lines.empty() ? "" : "\n") + e;
    }
    return Status::Unavailable(lines);
  }
  routes_ = std::move(*checked);
  if (plan_.verbose && !remote.empty()) {
    std::printf("SSH was successful into all the remote hosts.\n");
    std::fflush(stdout);
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<JobRendezvous>> LocalSshRunner::OpenRendezvous() {
  if (context_.options.rendezvous_addr.empty()) {
    return StartEmbeddedRendezvous(plan_);
  }
  return ConnectRendezvousDaemon(plan_, context_.options);
}

StatusOr<Launch> LocalSshRunner::Workers(JobRendezvous& job) {
  const JobAccess& access = job.access();
  // A daemon's address is the same for every worker.
  AssignAddresses(
      plan_, routes_, iface_address_,
      context_.options.rendezvous_addr.empty() ? RendezvousPort(access) : 0);
  if (plan_.verbose) {
    Say("rendezvous on " + access.rendezvous_addr + ", job " + access.job_id +
        ", " + std::to_string(plan_.workers.size()) + " workers");
  }
  const std::string cwd = WorkingDirectory();
  const std::string ssh_exec = context_.helpers + "/hvd-ssh-exec";
  const std::string remote_exec = RemoteExecPath(context_);
  // A host's workers share one connection (its login shell starts once,
  // not once per worker), under a key of the job's and the host's.
  std::map<std::string, int> per_host;
  std::map<std::string, std::string> share;
  for (const WorkerPlan& w : plan_.workers) {
    if (!w.local && ++per_host[w.host] == 2) {
      share[w.host] = access.job_id + "/" + std::to_string(share.size());
    }
  }
  Launch launch;
  for (const WorkerPlan& w : plan_.workers) {
    std::vector<std::string> argv =
        w.local ? plan_.command
                : RemoteArgv(w, context_.options, ssh_exec, remote_exec,
                             share.count(w.host) ? share[w.host] : "");
    launch.processes.push_back(
        {argv, WorkerEnvironment(context_.env, plan_, w, access), cwd});
    launch.hosts.push_back(w.host);
  }
  launch.size = static_cast<int>(plan_.workers.size());
  launch.join_timeout = std::chrono::seconds(plan_.join_timeout_s);
  return launch;
}

}  // namespace hvd::launcher
