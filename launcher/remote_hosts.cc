#include "launcher/remote_hosts.h"

#include <future>
#include <set>

#include "launcher/ssh.h"

namespace hvd::launcher {
namespace {

SshTarget TargetFor(const std::string& host, const std::string& user,
                    const LaunchOptions& o) {
  SshTarget t;
  t.host = host;
  t.user = user;
  t.port = o.ssh_port;
  t.identity_file = o.ssh_identity_file;
  t.policy = o.host_key_check;
  t.timeout = std::chrono::seconds(o.start_timeout_s);
  return t;
}

std::string WithPort(const std::string& host, int port) {
  if (host.find(':') != std::string::npos) {
    return "[" + host + "]:" + std::to_string(port);
  }
  return host + ":" + std::to_string(port);
}

}  // namespace

StatusOr<HostRoute> CheckRemoteHost(const std::string& host,
                                    const std::string& user,
                                    const LaunchOptions& options) {
  HVD_ASSIGN_OR_RETURN(auto session,
                       SshSession::Connect(TargetFor(host, user, options)));
  return HostRoute{session->local_address(), session->peer_address()};
}

StatusOr<std::map<std::string, HostRoute>> CheckRemoteHosts(
    const LaunchPlan& plan, const LaunchOptions& options,
    std::vector<std::string>* errors) {
  std::map<std::string, std::future<StatusOr<HostRoute>>> checks;
  for (const WorkerPlan& w : plan.workers) {
    if (w.local || checks.count(w.host)) continue;
    checks.emplace(w.host, std::async(std::launch::async, [&options, w] {
                     return CheckRemoteHost(w.host, w.user, options);
                   }));
  }
  std::map<std::string, HostRoute> routes;
  for (auto& [host, check] : checks) {
    auto route = check.get();
    if (route.ok()) {
      routes[host] = *route;
    } else {
      errors->push_back(route.status().message());
    }
  }
  if (!errors->empty()) {
    return Status::Unavailable(
        "hosts", std::to_string(errors->size()) + " host(s) cannot be reached");
  }
  return routes;
}

void AssignAddresses(LaunchPlan& plan,
                     const std::map<std::string, HostRoute>& routes,
                     const std::string& iface_address, int rendezvous_port) {
  if (plan.all_local) return;  // loopback everywhere, the default
  // Local workers bind Gloo where remote peers reach this machine.
  std::string here = iface_address;
  if (here.empty() && !routes.empty())
    here = routes.begin()->second.local_address;
  for (WorkerPlan& w : plan.workers) {
    if (w.local) {
      if (rendezvous_port > 0) {
        w.rendezvous_addr = WithPort("127.0.0.1", rendezvous_port);
      }
      w.gloo_addr = here;
      continue;
    }
    const HostRoute& r = routes.at(w.host);
    std::string us = iface_address.empty() ? r.local_address : iface_address;
    if (rendezvous_port > 0) w.rendezvous_addr = WithPort(us, rendezvous_port);
    w.gloo_addr = r.peer_address;
  }
}

std::vector<std::string> RemoteArgv(const WorkerPlan& w, const LaunchOptions& o,
                                    const std::string& ssh_exec,
                                    const std::string& remote_exec,
                                    const std::string& share) {
  std::vector<std::string> argv = {
      ssh_exec,
      "--host",
      w.host,
      "--port",
      std::to_string(o.ssh_port),
      "--policy",
      o.host_key_check == HostKeyCheck::kStrict ? "strict"
      : o.host_key_check == HostKeyCheck::kOff  ? "off"
                                                : "accept-new",
      "--timeout",
      std::to_string(o.start_timeout_s),
      "--wrapper",
      remote_exec};
  if (!o.launcher_cmd.empty()) {
    argv.push_back("--command");
    argv.push_back(o.launcher_cmd);
  } else if (!share.empty()) {
    argv.push_back("--share");
    argv.push_back(share);
  }
  if (!w.user.empty()) {
    argv.push_back("--user");
    argv.push_back(w.user);
  }
  if (!o.ssh_identity_file.empty()) {
    argv.push_back("--identity");
    argv.push_back(o.ssh_identity_file);
  }
  argv.push_back("--");
  argv.insert(argv.end(), o.command.begin(), o.command.end());
  return argv;
}

}  // namespace hvd::launcher
