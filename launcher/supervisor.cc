#include "launcher/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "launcher/supervised_job.h"

namespace hvd::launcher {
namespace supervision {
namespace {

int g_signal_pipe[2] = {-1, -1};

void OnSignal(int signo) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(signo);
  (void)!write(g_signal_pipe[1], &b, 1);
  errno = saved;
}

int ExitCodeOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

std::string DescribeStatus(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    const char* name = sigabbrev_np(sig);
    return "was killed by signal " + std::to_string(sig) +
           (name ? std::string(" (SIG") + name + ")" : std::string()) +
           ", exit code " + std::to_string(128 + sig);
  }
  return "exited with code " + std::to_string(ExitCodeOf(wait_status));
}

}  // namespace

void Job::KillAll(int sig, bool only_running) {
  for (auto& w : workers_) {
    if (w->proc.pid <= 0) continue;
    if (only_running && !w->running) continue;
    // The worker leads its group: this reaches everything it started.
    kill(-w->proc.pid, sig);
  }
}

void Job::BeginStop(std::string why) {
  if (stopping_) return;
  stopping_ = true;
  int running = 0;
  for (const auto& w : workers_) running += w->running;
  if (running > 0 && options_.step) {
    Say(why + "; stopping " + options_.step->format->name());
  } else if (running > 0) {
    Say(why + "; stopping " + std::to_string(running) + " worker" +
        (running == 1 ? "" : "s"));
  } else if (driver_ != nullptr) {
    Say(why);
  }
  KillAll(SIGTERM, true);
  kill_at_ = Clock::now() + options_.grace;
}

void Job::Reap() {
  for (size_t i = 0; i < workers_.size(); ++i) {
    Worker& w = *workers_[i];
    if (!w.running) continue;
    int status = 0;
    pid_t r = waitpid(w.proc.pid, &status, WNOHANG);
    if (r != w.proc.pid) continue;
    w.running = false;
    w.wait_status = status;
    // A step's tasks say which of them failed in its output: read all of
    // it (the program is gone, so its pipes end promptly) before judging
    // the exit.
    if (options_.step) DrainWorker(w);
    if (options_.verbose) {
      Say("rank " + std::to_string(w.rank) + " " + DescribeStatus(status));
    }
    int code = ExitCodeOf(status);
    if (driver_ != nullptr) {
      // Its group may hold what it started; the driver decides the rest.
      kill(-w.proc.pid, SIGKILL);
      if (w.stop_requested || stopping_) continue;
      if (code != 0) {
        Say("worker " + w.host + "[" + std::to_string(w.slot) + "] (rank " +
            std::to_string(w.rank) + ") " + DescribeStatus(status));
      }
      driver_->Exited(w.host, w.slot, code);
      continue;
    }
    if (!options_.step && options_.exited) {
      options_.exited(w.host, w.slot, code);
    }
    if (code == 0 && !stopping_ && !options_.step && options_.members) {
      exited_ok_.insert(w.rank);
    }
    // A rank that fails may have waited for one that left: said first.
    if (code != 0 && !stopping_) CheckLeftBehind(/*now=*/true);
    if (code != 0 && !stopping_ && !failed_task_ && step_ &&
        step_->failed_task()) {
      // The program (mpirun) exits with the first failed task's status.
      failed_task_ = *step_->failed_task();
      exit_code_ = code;
      Say("rank " + std::to_string(*failed_task_) + " on host " +
          options_.step->hosts[*failed_task_] + " exited with code " +
          std::to_string(code));
    }
    if (code != 0 && !stopping_ && !first_failure_ && !failed_task_) {
      // After the stall inspector's report the job's end is no news.
      if (!options_.step && options_.dump_on_failure && AnyRunning() &&
          stall_finding_.empty()) {
        for (const std::string& line :
             options_.dump_on_failure(rendezvous::RankOnHost(w.rank, w.host))) {
          Say(line);
        }
      }
      first_failure_ = static_cast<int>(i);
      exit_code_ = code;
      BeginStop(!options_.step
                    ? "rank " + std::to_string(w.rank) + " on host " + w.host +
                          " " + DescribeStatus(status)
                    : options_.step->format->name() + " " +
                          DescribeStatus(status) +
                          (step_->program_said().empty()
                               ? ""
                               : " (" + step_->program_said() + ")"));
    }
  }
}

void Job::HandleSignals() {
  unsigned char buf[64];
  ssize_t n;
  while ((n = read(g_signal_pipe[0], buf, sizeof(buf))) > 0) {
    for (ssize_t i = 0; i < n; ++i) {
      int sig = buf[i];
      if (sig == SIGCHLD) continue;  // reaped below on every wake-up
      if (sig == SIGUSR1) {
        if (options_.dump_flight) {
          for (const std::string& line : options_.dump_flight()) Say(line);
        }
        continue;
      }
      if (stopping_) {
        // Asked again while stopping: no more grace.
        Say("second signal; killing every worker now");
        KillAll(SIGKILL, false);
        killed_ = true;
        continue;
      }
      exit_code_ = 128 + sig;
      const char* name = sigabbrev_np(sig);
      BeginStop(std::string("received SIG") + (name ? name : "?"));
    }
  }
}

bool Job::WatchingStart() const {
  return driver_ == nullptr && !start_checked_ && !stopping_ &&
         options_.joined_ranks && options_.join_timeout.count() > 0;
}

void Job::CheckStartTimeout() {
  if (!WatchingStart() || Clock::now() < start_deadline_) return;
  start_checked_ = true;
  std::vector<int> joined = options_.joined_ranks();
  std::set<int> joined_set(joined.begin(), joined.end());
  std::string missing;
  int count = 0;
  auto check = [&](int rank, const std::string& host) {
    if (joined_set.count(rank)) return;
    if (count < 16) {
      missing += (count ? ", " : "") + std::to_string(rank) + " (" + host + ")";
    }
    ++count;
  };
  for (const auto& w : workers_) {
    if (!w->running) continue;
    if (!options_.step) {
      check(w->rank, w->host);
      continue;
    }
    for (size_t t = 0; t < options_.step->hosts.size(); ++t) {
      check(static_cast<int>(t), options_.step->hosts[t]);
    }
  }
  if (count == 0) return;
  if (count > 16) missing += " and " + std::to_string(count - 16) + " more";
  exit_code_ = 1;
  first_failure_ = -1;
  BeginStop("rank" + std::string(count == 1 ? " " : "s ") + missing +
            " did not join the rendezvous within " +
            std::to_string(options_.join_timeout.count() / 1000) +
            " s (raise --join-timeout, or check that the program calls "
            "hvd::init())");
}

bool Job::WatchingLeftBehind() const {
  return driver_ == nullptr && !stopping_ && !exited_ok_.empty() &&
         AnyRunning();
}

void Job::CheckLeftBehind(bool now) {
  if (!now && (!WatchingLeftBehind() || Clock::now() < next_members_check_)) {
    return;
  }
  if (exited_ok_.empty() || !options_.members) return;
  next_members_check_ = Clock::now() + std::chrono::seconds(1);
  const std::vector<rendezvous::Member> members = options_.members();
  for (const rendezvous::Member& gone : members) {
    if (!exited_ok_.count(gone.rank)) continue;
    for (const rendezvous::Member& m : members) {
      // One that also ended well waits for nobody.
      if (m.exit_status == 0 || m.generation <= gone.generation) continue;
      Say(rendezvous::RankOnHost(gone.rank, gone.host) +
          " exited with status 0 after generation " +
          std::to_string(gone.generation) + ", but " +
          rendezvous::RankOnHost(m.rank, m.host) + " joined generation " +
          std::to_string(m.generation) +
          " and waits for it there (until HOROVOD_GLOO_TIMEOUT_SECONDS)");
      exited_ok_.erase(gone.rank);
      break;
    }
  }
}

bool Job::WatchingFlightAsk() const {
  return !stopping_ && options_.flight_asked && AnyRunning();
}

void Job::CheckFlightAsk() {
  if (!WatchingFlightAsk() || Clock::now() < next_flight_check_) return;
  for (const std::string& line : options_.flight_asked(&stall_finding_)) {
    Say(line);
  }
  next_flight_check_ = Clock::now() + std::chrono::seconds(1);
}

bool Job::AnyRunning() const {
  return std::any_of(workers_.begin(), workers_.end(),
                     [](const auto& w) { return w->running; });
}

int Job::PollTimeoutMs() const {
  auto now = Clock::now();
  std::optional<Clock::time_point> next;
  auto consider = [&](Clock::time_point t) {
    next = next ? std::min(*next, t) : t;
  };
  if (stopping_ && !killed_) consider(kill_at_);
  if (WatchingStart()) consider(start_deadline_);
  if (WatchingLeftBehind()) consider(next_members_check_);
  if (WatchingFlightAsk()) consider(next_flight_check_);
  if (driver_ != nullptr && !stopping_) {
    // The driver polls discovery once a second.
    consider(now + std::chrono::seconds(1));
    for (const auto& w : workers_) {
      if (w->running && w->stop_requested) consider(w->kill_at);
    }
  }
  if (!next) return -1;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*next - now)
                .count();
  return static_cast<int>(std::clamp<long long>(ms + 1, 0, 60000));
}

bool Job::StartWatchdog() {
  if (options_.watchdog.empty()) return true;
  ProcessSpec spec;
  spec.argv = {options_.watchdog, "--watchdog"};
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.die_with_launcher = false;
  spec.stdin_pipe = true;
  auto w = spawner_.Spawn(spec);
  if (!w.ok()) {
    Say("cannot start the watchdog " + options_.watchdog + ": " +
        w.status().message());
    return false;
  }
  watchdog_ = *w;
  close(watchdog_.stdout_fd);
  close(watchdog_.stderr_fd);
  if (!options_.job_id.empty()) {
    WriteAll(watchdog_.stdin_fd, "JOB " + options_.job_id + "\n");
  }
  return true;
}

bool Job::StartWorker(Worker& w, const ProcessSpec& spec) {
  auto proc = spawner_.Spawn(spec);
  if (!proc.ok()) {
    Say("rank " + std::to_string(w.rank) + " on host " + w.host + ": " +
        proc.status().message());
    return false;
  }
  w.proc = *proc;
  w.running = true;
  if (watchdog_.stdin_fd >= 0) {
    WriteAll(watchdog_.stdin_fd, "PG " + std::to_string(w.proc.pid) + "\n");
  }
  if (options_.verbose) {
    Say("started rank " + std::to_string(w.rank) + " (pid " +
        std::to_string(w.proc.pid) + ") on " + w.host);
  }
  return true;
}

bool Job::DriveElastic() {
  if (stopping_) return AnyRunning();
  WorkerDriver::Step step = driver_->Tick();
  if (step.failure) {
    exit_code_ = 1;
    BeginStop(*step.failure);
    return true;
  }
  for (const auto& [host, slot] : step.stop) {
    for (auto& w : workers_) {
      if (!w->running || w->stop_requested || w->host != host ||
          w->slot != slot) {
        continue;
      }
      w->stop_requested = true;
      w->kill_at = Clock::now() + options_.grace;
      kill(-w->proc.pid, SIGTERM);
    }
  }
  for (WorkerDriver::Start& s : step.start) {
    auto w = std::make_unique<Worker>();
    w->rank = s.label;
    w->host = s.host;
    w->slot = s.slot;
    if (!options_.output_dir.empty()) {
      Status st = OpenOutputFiles(*w, w->rank + 1, /*append=*/true);
      if (!st.ok()) {
        exit_code_ = 1;
        BeginStop(st.message());
        return true;
      }
    }
    Worker& ref = *w;
    workers_.push_back(std::move(w));
    if (!StartWorker(ref, s.spec)) {
      // As a worker that failed at once: its host leaves the job.
      driver_->Exited(ref.host, ref.slot, 127);
    }
  }
  for (auto& w : workers_) {
    if (w->running && w->stop_requested && Clock::now() >= w->kill_at) {
      kill(-w->proc.pid, SIGKILL);
    }
  }
  if (step.done && !AnyRunning()) done_ = true;
  return !done_;
}

int Job::Run(const std::vector<ProcessSpec>& specs,
             const std::vector<std::string>& hosts) {
  if (options_.step) {
    step_.emplace(static_cast<int>(options_.step->hosts.size()),
                  *options_.step->format);
  }
  std::map<std::string, int> per_host;  // ranks fill each host's slots
  for (size_t r = 0; r < specs.size(); ++r) {
    auto w = std::make_unique<Worker>();
    w->rank = static_cast<int>(r);
    w->host = hosts[r];
    w->slot = per_host[hosts[r]]++;
    if (!options_.output_dir.empty()) {
      Status s = OpenStepOrWorkerFiles(*w, static_cast<int>(specs.size()));
      if (!s.ok()) {
        Say(s.message());
        return 1;
      }
    }
    workers_.push_back(std::move(w));
  }
  if (!StartWatchdog()) return 1;
  for (size_t r = 0; r < specs.size(); ++r) {
    if (!StartWorker(*workers_[r], specs[r])) {
      exit_code_ = 127;
      first_failure_ = static_cast<int>(r);
      BeginStop("could not start every worker");
      break;
    }
  }
  start_deadline_ = Clock::now() + options_.join_timeout;

  // Until every worker is reaped (an elastic job: until the driver ends
  // it). Output of exited workers keeps flowing.
  for (;;) {
    Reap();
    if (driver_ != nullptr) {
      if (!DriveElastic()) break;
      if (stopping_ && !AnyRunning()) break;
    } else if (!AnyRunning()) {
      break;
    }
    CheckStartTimeout();
    CheckLeftBehind(/*now=*/false);
    CheckFlightAsk();
    if (stopping_ && !killed_ && Clock::now() >= kill_at_) {
      KillAll(SIGKILL, true);
      killed_ = true;
    }
    std::vector<pollfd> fds;
    std::vector<std::pair<Worker*, Stream>> owners;
    fds.push_back({g_signal_pipe[0], POLLIN, 0});
    owners.push_back({nullptr, Stream::kStdout});
    CollectOutputFds(fds, owners);
    int n = poll(fds.data(), fds.size(), PollTimeoutMs());
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if (fds[0].revents) HandleSignals();
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents) {
        Worker* w = owners[i].first;
        ReadOutput(*w, fds[i].fd, owners[i].second);
      }
    }
  }

  Drain();
  if (watchdog_.pid > 0) {
    // Everything is reaped and killed; the watchdog only sweeps what a
    // worker that died early left in /dev/shm.
    WriteAll(watchdog_.stdin_fd, "DONE\n");
    close(watchdog_.stdin_fd);
    int status;
    waitpid(watchdog_.pid, &status, 0);
  }

  std::optional<std::pair<int, std::string>> first;  // rank, host
  if (failed_task_) {
    first = {*failed_task_, options_.step->hosts[*failed_task_]};
  } else if (first_failure_ && *first_failure_ >= 0 && !options_.step) {
    const Worker& w = *workers_[*first_failure_];
    first = {w.rank, w.host};
  }
  if (first) {
    Say("one or more processes exited with non-zero status; the first was "
        "rank " +
        std::to_string(first->first) + " on host " + first->second +
        " (Process name: " + std::to_string(first->first) +
        ", Exit code: " + std::to_string(exit_code_) + ")" +
        (stall_finding_.empty()
             ? ""
             : "; the stall inspector ended the job: " + stall_finding_));
  }
  return exit_code_;
}

}  // namespace supervision

using supervision::g_signal_pipe;
using supervision::OnSignal;
using supervision::Say;

void InstallLauncherSignalHandlers() {
  if (g_signal_pipe[0] < 0) {
    if (pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
      Say(std::string("cannot create the signal pipe: ") +
          std::strerror(errno));
      _exit(1);
    }
  }
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1})
    sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int Supervisor::Run(const std::vector<ProcessSpec>& specs,
                    const std::vector<std::string>& hosts, Spawner& spawner) {
  supervision::Job job(options_, spawner, nullptr);
  return job.Run(specs, hosts);
}

int Supervisor::RunElastic(WorkerDriver& driver, Spawner& spawner) {
  supervision::Job job(options_, spawner, &driver);
  return job.Run({}, {});
}

}  // namespace hvd::launcher