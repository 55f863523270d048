// Starting worker processes. The supervisor sees only this interface, so
// tests can record what would be started, and SSH can slot in beside it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvd::launcher {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is resolved on PATH
  std::vector<std::string> env;   // "K=V"; the whole environment
  std::string cwd;                // empty: the launcher's
  // SIGKILL when the launcher dies (workers); false for the watchdog that
  // must outlive it.
  bool die_with_launcher = true;
  // Give the child a pipe as stdin (SpawnedProcess::stdin_fd); else
  // /dev/null.
  bool stdin_pipe = false;
};

struct SpawnedProcess {
  pid_t pid = -1;      // also the process group id: each worker leads its own
  int stdout_fd = -1;  // read ends, non-blocking, close-on-exec
  int stderr_fd = -1;
  int stdin_fd = -1;  // write end, close-on-exec, when stdin_pipe
};

class Spawner {
 public:
  virtual ~Spawner() = default;
  virtual StatusOr<SpawnedProcess> Spawn(const ProcessSpec& spec) = 0;
};

// fork/exec on this machine. Each child leads a new process group (so the
// whole tree can be signalled) and gets SIGKILL if the launcher dies.
// Must be used from the thread that lives as long as the children
// (PR_SET_PDEATHSIG fires when the forking thread exits).
std::unique_ptr<Spawner> MakeLocalSpawner();

// The path execve would run for `program` with `path_env` (PATH), or
// NotFound naming it. A program containing '/' is checked as given.
StatusOr<std::string> ResolveProgram(const std::string& program,
                                     const std::string& path_env);

}  // namespace hvd::launcher
