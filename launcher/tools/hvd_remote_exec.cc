// hvd-remote-exec: the tiny wrapper that runs one worker on a remote host
// (with --agent, the host's workers of one shared connection, each under a
// wrapper of its own: host_agent.h).
//
// sshd starts it with the SSH channel as stdin/stdout/stderr. It reads the
// worker's launch (remote_protocol.h) from stdin, starts the worker in a
// process group of its own, and then watches stdin: TERM forwards SIGTERM
// to the group, KILL sends SIGKILL, and EOF (the launcher died, or the
// connection broke) kills the group at once. When the worker exits, what
// is left of its group is killed, and the wrapper exits with the worker's
// status (128+N for signal N), so nothing of the job outlives it.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/host_port.h"
#include "common/shm_names.h"
#include "common/worker_env.h"
#include "launcher/local_host.h"
#include "launcher/remote_protocol.h"
#include "launcher/runners/srun_step.h"
#include "launcher/spawner.h"
#include "launcher/tools/host_agent.h"

extern char** environ;

namespace {

int g_sigchld_pipe[2];
volatile sig_atomic_t g_parent_died = 0;

void OnChild(int) {
  int saved = errno;
  (void)!write(g_sigchld_pipe[1], "c", 1);
  errno = saved;
}

volatile sig_atomic_t g_terminate = 0;

// SIGTERM to the wrapper itself (a launcher command that signals its
// group): passed on to the worker, as a TERM line is.
void OnTerminate(int) {
  int saved = errno;
  g_terminate = 1;
  (void)!write(g_sigchld_pipe[1], "t", 1);
  errno = saved;
}

void OnParentDeath(int) {
  int saved = errno;
  g_parent_died = 1;
  (void)!write(g_sigchld_pipe[1], "p", 1);
  errno = saved;
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "hvd-remote-exec: %s\n", what.c_str());
  return 127;
}

}  // namespace

// Removes the job's shared-memory names that no live process uses, the
// processes of `dying` (just killed) not counting. A worker killed before
// its host's peers mapped a segment leaves its name; nobody else would.
void SweepSegments(const std::string& job_id, const std::vector<pid_t>& dying) {
  (void)hvd::SweepJobSegments(job_id, dying);
}

// --watchdog: started by horovodrun beside its local workers, outliving it.
// Reads "JOB <id>" and "PG <pgid>" lines; if stdin closes before "DONE"
// (the launcher was killed), kills every group it was told about. Either
// way it then removes the job's shared-memory names its workers left.
int Watchdog() {
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  std::vector<pid_t> groups;
  std::string job_id;
  std::string buffer;
  char chunk[4096];
  for (;;) {
    ssize_t n = read(STDIN_FILENO, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buffer.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buffer.find('\n')) != std::string::npos) {
      std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      if (line == "DONE") {
        SweepSegments(job_id, groups);
        return 0;
      }
      if (line.rfind("PG ", 0) == 0)
        groups.push_back(std::atoi(line.c_str() + 3));
      if (line.rfind("JOB ", 0) == 0) job_id = line.substr(4);
    }
  }
  for (pid_t g : groups) {
    if (g > 1) kill(-g, SIGKILL);
  }
  SweepSegments(job_id, groups);
  return 0;
}

// --srun -- COMMAND...: one task of horovodrun's srun step. Maps the step's
// environment to the worker's place (launcher/runners/srun_step.h), runs the
// worker in a process group of its own, passes on the signals slurmstepd sends,
// and exits with the worker's status; a failure is also said with the marker
// the launcher looks for, so it can name the first failing rank.
volatile sig_atomic_t g_worker_group = 0;

void ForwardSignal(int sig) {
  if (g_worker_group > 0) kill(-g_worker_group, sig);
}

int SrunTask(int argc, char** args) {
  int first = 2;
  if (first < argc && std::string(args[first]) == "--") ++first;
  if (first >= argc) return Fail("--srun: give the command after --");
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto fail = [](const std::string& what) {
    std::fprintf(stderr, "hvd-remote-exec: %s\n%s\n", what.c_str(),
                 hvd::launcher::SrunExitMarker(127).c_str());
    return 127;
  };
  auto placed = hvd::launcher::PlaceSrunTask(env);
  if (!placed.ok()) return fail(placed.status().ToString());
  for (const std::string& kv : hvd::launcher::SrunWorkerEnv(*placed)) {
    size_t eq = kv.find('=');
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (!env.count(hvd::worker_env::kGlooAddr) &&
      env.count(hvd::worker_env::kRendezvousAddr)) {
    // Gloo listens where this node reaches the launcher: an address the
    // other nodes reach too.
    auto rdv = hvd::ParseHostPortList(env[hvd::worker_env::kRendezvousAddr],
                                      "rendezvous");
    if (rdv.ok()) {
      auto here = hvd::LocalAddressToward(rdv->front().host);
      if (here.ok()) env[hvd::worker_env::kGlooAddr] = *here;
    }
  }
  auto program = hvd::launcher::ResolveProgram(
      args[first], env.count("PATH") ? env["PATH"] : "/usr/bin:/bin");
  if (!program.ok()) return fail(program.status().message());
  std::vector<std::string> env_list;
  for (const auto& [k, v] : env) env_list.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& e : env_list) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) return fail(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    // In its own group, out of slurmstepd's reach: if this wrapper is
    // killed, the worker must not outlive it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) _exit(129);
    execve(program->c_str(), args + first, envp.data());
    std::fprintf(stderr, "hvd-remote-exec: cannot run %s: %s\n",
                 program->c_str(), std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  g_worker_group = pid;
  struct sigaction sa {};
  sa.sa_handler = ForwardSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGCONT, SIGUSR1, SIGUSR2}) {
    sigaction(sig, &sa, nullptr);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const int code = WIFEXITED(status)     ? WEXITSTATUS(status)
                   : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                         : 1;
  kill(-pid, SIGKILL);  // what the worker left in its group
  SweepSegments(
      env.count(hvd::worker_env::kJobId) ? env[hvd::worker_env::kJobId] : "",
      {pid});
  if (code != 0) {
    std::fprintf(stderr, "%s\n", hvd::launcher::SrunExitMarker(code).c_str());
    std::fflush(stderr);
  }
  return code;
}

namespace {

// If sshd's session process dies, stdin closes too; SIGHUP covers a stdin
// kept open by another process. Either way the worker's group is killed
// first, so the signal must not kill this process outright.
bool InstallSignalHandlers() {
  if (pipe2(g_sigchld_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  struct sigaction hup {};
  hup.sa_handler = OnParentDeath;
  sigaction(SIGHUP, &hup, nullptr);
  struct sigaction term {};
  term.sa_handler = OnTerminate;
  sigaction(SIGTERM, &term, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGHUP);
  return true;
}

// Reads the launch header from stdin; what came after it (control lines)
// stays in `buffer`. Empty, or why it could not.
std::string ReadLaunch(std::string& buffer,
                       hvd::launcher::RemoteLaunch& launch) {
  char chunk[65536];
  for (;;) {
    auto used = hvd::launcher::DecodeRemoteLaunch(buffer, &launch);
    if (!used.ok()) return used.status().ToString();
    if (*used > 0) {
      buffer.erase(0, *used);
      return "";
    }
    ssize_t n = read(STDIN_FILENO, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "the launcher closed the channel before the launch";
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

// Forks the worker in a process group of its own, in the launcher's
// working directory, with stdin from /dev/null; -1 when fork fails.
pid_t StartWorker(hvd::launcher::RemoteLaunch& launch,
                  const std::string& program) {
  std::vector<char*> argv, envp;
  for (std::string& a : launch.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : launch.env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t wrapper = getpid();
  pid_t pid = fork();
  if (pid != 0) {
    if (pid > 0) setpgid(pid, pid);
    return pid;
  }
  setpgid(0, 0);
  // This wrapper ends the worker's group on every way out but its own
  // kill -9; then the worker must not outlive it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != wrapper) _exit(129);
  signal(SIGPIPE, SIG_DFL);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, STDIN_FILENO);
  if (!launch.cwd.empty() && chdir(launch.cwd.c_str()) != 0) {
    std::fprintf(stderr, "hvd-remote-exec: cannot enter %s: %s\n",
                 launch.cwd.c_str(), std::strerror(errno));
    _exit(127);
  }
  execve(program.c_str(), argv.data(), envp.data());
  std::fprintf(stderr, "hvd-remote-exec: cannot run %s: %s\n", program.c_str(),
               std::strerror(errno));
  _exit(127);
}

// Waits for the worker while obeying the launcher's control lines (TERM,
// KILL) and signals; the worker's exit status (128+N for signal N), or 129
// when the session died. The launcher's going away kills the worker.
int Supervise(pid_t pid, std::string control) {
  bool stdin_open = true;
  char chunk[65536];
  for (;;) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
      return 1;
    }
    // Control lines already buffered with the header.
    size_t nl;
    while ((nl = control.find('\n')) != std::string::npos) {
      std::string line = control.substr(0, nl);
      control.erase(0, nl + 1);
      if (line == "TERM") kill(-pid, SIGTERM);
      if (line == "KILL") kill(-pid, SIGKILL);
    }
    pollfd fds[2] = {{g_sigchld_pipe[0], POLLIN, 0},
                     {stdin_open ? STDIN_FILENO : -1, POLLIN, 0}};
    if (poll(fds, 2, 1000) < 0 && errno != EINTR) return 1;
    if (fds[0].revents) {
      char drain[64];
      while (read(g_sigchld_pipe[0], drain, sizeof(drain)) > 0) {
      }
    }
    if (g_parent_died) return 129;
    if (g_terminate) {
      g_terminate = 0;
      kill(-pid, SIGTERM);
    }
    if (stdin_open && fds[1].revents) {
      ssize_t n = read(STDIN_FILENO, chunk, sizeof(chunk));
      if (n > 0) {
        control.append(chunk, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        // The launcher is gone: nothing of the job may stay behind.
        stdin_open = false;
        kill(-pid, SIGKILL);
      }
    }
  }
}

}  // namespace

int main(int argc, char** args) {
  if (argc > 1 && std::string(args[1]) == "--watchdog") return Watchdog();
  if (argc > 1 && std::string(args[1]) == "--srun") return SrunTask(argc, args);
  if (argc > 1 && std::string(args[1]) == "--agent") {
    return hvd::launcher::RunHostAgent();
  }
  if (!InstallSignalHandlers()) return Fail("pipe");
  std::string buffer;
  hvd::launcher::RemoteLaunch launch;
  if (std::string why = ReadLaunch(buffer, launch); !why.empty()) {
    return Fail(why);
  }
  std::string path_env = "/usr/local/bin:/usr/bin:/bin";
  for (const std::string& kv : launch.env) {
    if (kv.rfind("PATH=", 0) == 0) path_env = kv.substr(5);
  }
  auto program = hvd::launcher::ResolveProgram(launch.argv[0], path_env);
  if (!program.ok()) return Fail(program.status().message());

  if (getppid() == 1) return Fail("the session ended before the launch");
  struct sigaction sa {};
  sa.sa_handler = OnChild;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  const pid_t pid = StartWorker(launch, *program);
  if (pid < 0) return Fail(std::string("fork: ") + std::strerror(errno));
  const std::string job_var =
      hvd::worker_env::Entry(hvd::worker_env::kJobId, "");
  std::string job_id;
  for (const std::string& kv : launch.env) {
    if (kv.rfind(job_var, 0) == 0) job_id = kv.substr(job_var.size());
  }
  const int code = Supervise(pid, buffer);
  // Every way out ends the worker's group, then sweeps what it left.
  kill(-pid, SIGKILL);
  SweepSegments(job_id, {pid});
  return code;
}
