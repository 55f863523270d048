#include "tests/util/slurm_cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/util/ssh_host.h"

namespace hvd::testing {
namespace {

bool Installed(const std::string& path) {
  return ::access(path.c_str(), X_OK) == 0;
}

// The last `n` lines of a daemon's output that say "error:" or "fatal:",
// joined: why it did not come up (its folder goes with the test).
std::string LastErrors(const std::string& log, size_t n) {
  std::ifstream f(log);
  std::vector<std::string> errors;
  for (std::string line; std::getline(f, line);) {
    if (line.find("error:") != std::string::npos ||
        line.find("fatal:") != std::string::npos) {
      errors.push_back(line);
    }
  }
  std::string out;
  for (size_t i = errors.size() > n ? errors.size() - n : 0; i < errors.size();
       ++i) {
    out += (out.empty() ? "" : "; ") + errors[i];
  }
  return out.empty() ? "no errors in " + log : out;
}

}  // namespace

SlurmCluster::SlurmCluster(const TempDir& dir, int nodes, int cpus) {
  for (const char* p : {"/usr/sbin/munged", "/usr/sbin/slurmctld",
                        "/usr/sbin/slurmd", "/usr/bin/sinfo"}) {
    if (!Installed(p)) {
      error_ = std::string(p) +
               " is missing (packaging/install-deps.sh installs Slurm and "
               "munge)";
      return;
    }
  }
  dir_ = dir.path() + "/slurm";
  std::filesystem::create_directories(dir_ + "/state");
  conf_ = dir_ + "/slurm.conf";
  {
    // munge wants a key only its user reads.
    std::ofstream key(dir_ + "/munge.key", std::ios::binary);
    std::ifstream random("/dev/urandom", std::ios::binary);
    char bytes[1024];
    random.read(bytes, sizeof(bytes));
    key.write(bytes, sizeof(bytes));
  }
  ::chmod((dir_ + "/munge.key").c_str(), 0600);
  const int ctld_port = FreePort("127.0.0.1");
  std::ofstream c(conf_);
  c << "ClusterName=hvdtest\n"
    << "SlurmctldHost=localhost(127.0.0.1)\n"
    << "SlurmctldPort=" << ctld_port << "\n"
    << "AuthType=auth/munge\nCredType=cred/munge\n"
    << "AuthInfo=socket=" << dir_ << "/munge.sock\n"
    << "SlurmUser=root\nSlurmdUser=root\n"
    << "StateSaveLocation=" << dir_ << "/state\n"
    << "SlurmdSpoolDir=" << dir_ << "/spool-%n\n"
    << "SlurmctldPidFile=" << dir_ << "/slurmctld.pid\n"
    << "SlurmdPidFile=" << dir_ << "/slurmd-%n.pid\n"
    << "SlurmctldLogFile=" << dir_ << "/slurmctld.log\n"
    << "SlurmdLogFile=" << dir_
    << "/slurmd-%n.log\n"
    // Processes tracked by parentage, no cgroups or affinity: what a
    // container without systemd allows.
    << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
    << "SchedulerType=sched/builtin\nSelectType=select/cons_tres\n"
    << "SelectTypeParameters=CR_CPU\n"
    << "SlurmdParameters=config_overrides\nReturnToService=2\n"
    << "MpiDefault=none\nSwitchType=switch/none\nJobCompType=jobcomp/none\n"
    << "AccountingStorageType=accounting_storage/none\n"
    << "JobAcctGatherType=jobacct_gather/none\n"
    << "KillWait=5\nMessageTimeout=5\n";
  for (int i = 0; i < nodes; ++i) {
    c << "NodeName=" << node(i)
      << " NodeAddr=127.0.0.1 Port=" << FreePort("127.0.0.1")
      << " CPUs=" << cpus << " State=UNKNOWN\n";
  }
  c << "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE "
       "State=UP\n";
  c.close();

  if (Start({"/usr/sbin/munged", "-F", "--force", "-S", dir_ + "/munge.sock",
             "--key-file=" + dir_ + "/munge.key",
             "--pid-file=" + dir_ + "/munged.pid",
             "--seed-file=" + dir_ + "/munged.seed",
             "--log-file=" + dir_ + "/munged.log"},
            dir_ + "/munged.out") < 0) {
    return;
  }
  for (int tries = 0; tries < 200; ++tries) {
    if (std::filesystem::exists(dir_ + "/munge.sock")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (Start({"/usr/sbin/slurmctld", "-D", "-c", "-f", conf_},
            dir_ + "/slurmctld.out") < 0) {
    return;
  }
  for (int i = 0; i < nodes; ++i) {
    if (Start({"/usr/sbin/slurmd", "-D", "-N", node(i), "-f", conf_},
              dir_ + "/slurmd-" + node(i) + ".out") < 0) {
      return;
    }
  }
  if (!WaitIdle(nodes)) return;
  ok_ = true;
}

SlurmCluster::~SlurmCluster() { StopAll(); }

pid_t SlurmCluster::Start(const std::vector<std::string>& argv,
                          const std::string& log) {
  pid_t pid = fork();
  if (pid < 0) {
    error_ = "fork failed";
    return -1;
  }
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    setenv("SLURM_CONF", conf_.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  daemons_.push_back({pid, log});
  return pid;
}

bool SlurmCluster::WaitIdle(int nodes) {
  const std::string cmd = "SLURM_CONF=" + conf_ +
                          " sinfo -h -N -o %T 2>/dev/null | grep -c '^idle'";
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::string out;
    ShellCapture(cmd, &out);
    if (std::atoi(out.c_str()) >= nodes) return true;
    for (auto d = daemons_.begin(); d != daemons_.end(); ++d) {
      int status = 0;
      if (waitpid(d->pid, &status, WNOHANG) != d->pid) continue;
      const std::string name = std::filesystem::path(d->log).stem();
      error_ = name + " exited: " + LastErrors(d->log, 3);
      daemons_.erase(d);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  error_ = "the nodes were not idle within 60 s: " +
           LastErrors(dir_ + "/slurmd-" + node(0) + ".out", 3);
  return false;
}

void SlurmCluster::StopAll() {
  for (auto it = daemons_.rbegin(); it != daemons_.rend(); ++it) {
    const pid_t pid = it->pid;
    kill(pid, SIGTERM);
    int status = 0;
    bool gone = false;
    for (int tries = 0; tries < 100 && !gone; ++tries) {
      gone = waitpid(pid, &status, WNOHANG) == pid;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!gone) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
  }
  daemons_.clear();
}

}  // namespace hvd::testing
