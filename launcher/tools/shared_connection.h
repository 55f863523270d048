// hvd-ssh-exec --share KEY: the workers of one host share one SSH
// connection, as mpirun's daemons do, instead of one each (sshd starts
// every connection's command through the user's login shell, whose
// start-up can cost more than the handshake; see host_agent.h).
//
// The supervisor still starts one hvd-ssh-exec per worker and sees that
// worker's output, status and signals on it. Of those with the same KEY
// (horovodrun gives the job's id and the host), the first to claim KEY, an
// abstract unix socket of this machine, becomes the carrier: it opens the
// connection, runs `hvd-remote-exec --agent` through it, starts its own
// worker there, and serves the others, which hand it their launch over the
// socket and relay their worker's frames (remote_protocol.h) from it. Both
// ends check that the other runs as the same user.
//
// Lifetimes: a worker's process exits with its worker's status, as without
// sharing; the carrier stays while another worker uses its connection
// (unless its own worker failed: the job is ending, and closing the
// connection ends the host's workers). A worker whose carrier closes
// before taking its launch claims KEY again (it may become the carrier);
// after, the lost connection is its error, said once the launcher stops it
// (the carrier's own exit already told the launcher why).
#pragma once

#include <string>

#include "launcher/remote_protocol.h"
#include "launcher/ssh.h"

namespace hvd::launcher {

// Runs `launch` on `target` through the connection shared under `key`,
// relaying its output; `signal_fd` becomes readable on SIGTERM/SIGINT/
// SIGHUP (passed on as TERM). Returns the worker's status, or 255 with a
// line on stderr when it could not run.
int RunShared(const SshTarget& target, const std::string& wrapper,
              const RemoteLaunch& launch, const std::string& key,
              int signal_fd);

}  // namespace hvd::launcher
