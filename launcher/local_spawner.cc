#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "launcher/spawner.h"

namespace hvd::launcher {
namespace {

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

void CloseBoth(int fds[2]) {
  if (fds[0] >= 0) close(fds[0]);
  if (fds[1] >= 0) close(fds[1]);
}

class LocalSpawner final : public Spawner {
 public:
  StatusOr<SpawnedProcess> Spawn(const ProcessSpec& spec) override {
    if (spec.argv.empty())
      return Status::InvalidArgument("command", "is empty");
    std::string path_env = "/usr/local/bin:/usr/bin:/bin";
    for (const std::string& kv : spec.env) {
      if (kv.rfind("PATH=", 0) == 0) path_env = kv.substr(5);
    }
    HVD_ASSIGN_OR_RETURN(std::string program,
                         ResolveProgram(spec.argv[0], path_env));

    // Everything the child touches is prepared before fork: between fork and
    // exec only async-signal-safe calls are allowed (gRPC threads exist).
    std::vector<char*> argv;
    for (const std::string& a : spec.argv)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (const std::string& e : spec.env)
      envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const char* cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();

    int out[2] = {-1, -1}, err[2] = {-1, -1}, exec_err[2] = {-1, -1};
    int in[2] = {-1, -1};
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
        pipe2(exec_err, O_CLOEXEC) != 0 ||
        (spec.stdin_pipe && pipe2(in, O_CLOEXEC) != 0)) {
      int e = errno;
      CloseBoth(out);
      CloseBoth(err);
      CloseBoth(exec_err);
      CloseBoth(in);
      return Status::ResourceExhausted("pipe", std::strerror(e));
    }
    const bool die_with_launcher = spec.die_with_launcher;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
      int e = errno;
      CloseBoth(out);
      CloseBoth(err);
      CloseBoth(exec_err);
      return Status::ResourceExhausted("fork", std::strerror(e));
    }
    if (pid == 0) {
      setpgid(0, 0);
      if (die_with_launcher) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        // The launcher may have died between fork and prctl.
        if (getppid() != parent) _exit(137);
      }
      // Children start with default signal dispositions and an empty mask.
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      signal(SIGPIPE, SIG_DFL);
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      signal(SIGCHLD, SIG_DFL);
      dup2(out[1], STDOUT_FILENO);
      dup2(err[1], STDERR_FILENO);
      if (in[0] >= 0) {
        dup2(in[0], STDIN_FILENO);
      } else {
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, STDIN_FILENO);
      }
      if (cwd != nullptr && chdir(cwd) != 0) {
        int e = errno;
        (void)!write(exec_err[1], &e, sizeof(e));
        _exit(127);
      }
      execve(program.c_str(), argv.data(), envp.data());
      int e = errno;
      (void)!write(exec_err[1], &e, sizeof(e));
      _exit(127);
    }
    // Also set from the parent, so the group exists before we signal it.
    setpgid(pid, pid);
    close(out[1]);
    close(err[1]);
    close(exec_err[1]);
    if (in[0] >= 0) close(in[0]);
    int child_errno = 0;
    ssize_t n;
    do {
      n = read(exec_err[0], &child_errno, sizeof(child_errno));
    } while (n < 0 && errno == EINTR);
    close(exec_err[0]);
    if (n == sizeof(child_errno)) {
      int status;
      waitpid(pid, &status, 0);
      close(out[0]);
      close(err[0]);
      if (in[1] >= 0) close(in[1]);
      return Status::FailedPrecondition("cannot run '" + program + "'",
                                        std::strerror(child_errno));
    }
    fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
    fcntl(err[0], F_SETFL, fcntl(err[0], F_GETFL) | O_NONBLOCK);
    return SpawnedProcess{pid, out[0], err[0], in[1]};
  }
};

}  // namespace

StatusOr<std::string> ResolveProgram(const std::string& program,
                                     const std::string& path_env) {
  if (program.find('/') != std::string::npos) {
    if (IsExecutableFile(program)) return program;
    return Status::NotFound("command '" + program + "'",
                            "is not an executable file");
  }
  size_t start = 0;
  while (start <= path_env.size()) {
    size_t colon = path_env.find(':', start);
    if (colon == std::string::npos) colon = path_env.size();
    std::string dir = path_env.substr(start, colon - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + program;
    if (IsExecutableFile(candidate)) return candidate;
    start = colon + 1;
  }
  return Status::NotFound("command '" + program + "'",
                          "not found on PATH; give its path or fix PATH");
}

std::unique_ptr<Spawner> MakeLocalSpawner() {
  return std::make_unique<LocalSpawner>();
}

}  // namespace hvd::launcher
