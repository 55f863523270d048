// hvd-remote-exec --agent: the far end of one SSH connection shared by a
// host's workers (remote_protocol.h's frames).
//
// Why: sshd runs every command through the user's login shell, and on a
// host whose shell start-up is slow (conda, pyenv) a job of 8 ranks per
// host would pay it 8 times per host; mpirun pays it once (its orted).
// The agent pays it once and runs each worker under a wrapper of its own,
// the same one-worker hvd-remote-exec a connection per worker starts, so
// every rule of that wrapper holds: a launch frame forks a wrapper and
// writes the launch to its stdin, control frames follow it there, a
// hang-up closes that stdin (the wrapper kills its worker), and its
// stdout, stderr and exit status come back as frames. When the agent's
// stdin closes (the connection broke, the launcher died) every wrapper's
// stdin closes with it; if the agent itself dies, each wrapper hears it
// (parent-death signal) and kills its worker.
#pragma once

namespace hvd::launcher {

// Runs the agent on stdin/stdout to the end; the exit status for main.
int RunHostAgent();

}  // namespace hvd::launcher
