// Reaching the remote hosts of a plan: the pre-flight check (every remote
// host connected and authenticated, in parallel, before anything starts)
// and the per-worker addresses it reveals.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/cli.h"
#include "launcher/plan.h"
#include "launcher/spawner.h"

namespace hvd::launcher {

struct HostRoute {
  std::string local_address;  // our end of the SSH connection
  std::string peer_address;   // the host's end
};

// Connects to one host (as `user`; empty: ours) within the start timeout
// and returns the route to it; the error names the host.
StatusOr<HostRoute> CheckRemoteHost(const std::string& host,
                                    const std::string& user,
                                    const LaunchOptions& options);

// Connects to every remote host in parallel within the start timeout.
// Returns the route to each, or fills `errors` with one line per host that
// failed (and returns an error).
StatusOr<std::map<std::string, HostRoute>> CheckRemoteHosts(
    const LaunchPlan& plan, const LaunchOptions& options,
    std::vector<std::string>* errors);

// Fills each worker's rendezvous and Gloo addresses: local workers use
// loopback when the job is all local; otherwise every worker is told the
// address its host reaches the launcher at (the SSH connection's own end,
// or the --network-interface address) and binds Gloo to the address the
// launcher reached its host at. `rendezvous_port` 0 leaves the rendezvous
// address alone (a daemon's address is the same for everyone).
void AssignAddresses(LaunchPlan& plan,
                     const std::map<std::string, HostRoute>& routes,
                     const std::string& iface_address, int rendezvous_port);

// The argv that runs `command` on a remote worker's host through
// hvd-ssh-exec and hvd-remote-exec. Workers given the same non-empty
// `share` key share one SSH connection (launcher/tools/shared_connection.h;
// not with --launcher-cmd, whose command reaches the host its own way).
std::vector<std::string> RemoteArgv(const WorkerPlan& worker,
                                    const LaunchOptions& options,
                                    const std::string& ssh_exec,
                                    const std::string& remote_exec,
                                    const std::string& share = "");

}  // namespace hvd::launcher
