// Workers started one by one: on this machine as children, on other hosts
// through hvd-ssh-exec (libssh) and hvd-remote-exec, which ends the worker
// when its channel closes. Every remote host is reached before anything
// starts, and the connections tell each worker's addresses.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "launcher/plan.h"
#include "launcher/remote_hosts.h"
#include "launcher/runners/runner.h"

namespace hvd::launcher {

class LocalSshRunner : public Runner {
 public:
  explicit LocalSshRunner(RunnerContext context)
      : context_(std::move(context)) {}

  Status Prepare() override;
  StatusOr<std::unique_ptr<JobRendezvous>> OpenRendezvous() override;
  StatusOr<Launch> Workers(JobRendezvous& job) override;

 protected:
  // The route to each of `remote` (the plan's remote hosts, once each),
  // into routes_. Here: over SSH, every host in parallel.
  virtual Status LearnRoutes(const std::vector<std::string>& remote);

  const RunnerContext context_;
  LaunchPlan plan_;
  std::string iface_address_;  // --network-interface's, or ""
  std::map<std::string, HostRoute> routes_;
};

}  // namespace hvd::launcher
