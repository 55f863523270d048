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
#include <memory>
#include <optional>
#include <set>

#include "launcher/output.h"
#include "launcher/step_output.h"

namespace hvd::launcher {
namespace {

using Clock = std::chrono::steady_clock;

int g_signal_pipe[2] = {-1, -1};

void OnSignal(int signo) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(signo);
  (void)!write(g_signal_pipe[1], &b, 1);
  errno = saved;
}

void WriteAll(int fd, const std::string& data) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the reader went away; output is best effort
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void Say(const std::string& line) {
  WriteAll(STDERR_FILENO, "horovodrun: " + line + "\n");
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

struct Worker {
  int rank = 0;  // the rank its output carries (in an elastic job, its first)
  std::string host;
  int slot = 0;
  SpawnedProcess proc;
  int out_file = -1, err_file = -1;  // --output-filename copies
  LineSplitter out_lines, err_lines;
  bool running = false;
  int wait_status = 0;
  // Asked to stop on its own (an elastic job left its host): SIGKILL at
  // kill_at, and its exit is nobody's failure.
  bool stop_requested = false;
  Clock::time_point kill_at;
  // One process runs every task (SupervisorOptions::step): its tasks'
  // output files, by rank.
  std::vector<int> task_out_files, task_err_files;
};

class Job {
 public:
  Job(const SupervisorOptions& options, Spawner& spawner, WorkerDriver* driver)
      : options_(options), spawner_(spawner), driver_(driver) {}

  int Run(const std::vector<ProcessSpec>& specs,
          const std::vector<std::string>& hosts);

 private:
  Status OpenOutputFiles(Worker& w, int size, bool append);
  Status OpenStepOrWorkerFiles(Worker& w, int size);
  // A line piece of a step's output, under its task's rank.
  template <typename WriteOut>
  void EmitStepPiece(Worker& w, Stream stream, const Piece& piece,
                     const WriteOut& write_out);
  // Appends the open output pipes of every worker, with who owns each.
  void CollectOutputFds(std::vector<pollfd>& fds,
                        std::vector<std::pair<Worker*, Stream>>& owners);
  bool StartWatchdog();
  // Starts one worker; false (said why) when it could not be started.
  bool StartWorker(Worker& w, const ProcessSpec& spec);
  void Reap();
  void HandleSignals();
  void ReadOutput(Worker& w, int fd, Stream stream);
  void BeginStop(std::string why);
  void KillAll(int sig, bool only_running);
  void CheckStartTimeout();
  bool WatchingStart() const;
  // An elastic job: asks the driver what to change and does it. False once
  // the job is over (done, nothing running).
  bool DriveElastic();
  bool AnyRunning() const;
  int PollTimeoutMs() const;
  void Drain();
  // Reads one worker's output to its end (at most 2 s).
  void DrainWorker(Worker& w);

  const SupervisorOptions& options_;
  Spawner& spawner_;
  WorkerDriver* driver_;  // null: a fixed job
  std::vector<std::unique_ptr<Worker>> workers_;
  SpawnedProcess watchdog_;
  bool stopping_ = false;
  bool killed_ = false;
  bool done_ = false;  // elastic: the driver said the job is over
  Clock::time_point kill_at_;
  Clock::time_point start_deadline_;
  bool start_checked_ = false;
  std::optional<int> first_failure_;  // index into workers_
  int exit_code_ = 0;
  // A step: the first task that failed (its marker or the program's
  // report).
  std::optional<int> failed_task_;
  std::optional<StepOutput> step_;  // when the one process runs every task
};

void Job::CollectOutputFds(std::vector<pollfd>& fds,
                           std::vector<std::pair<Worker*, Stream>>& owners) {
  for (auto& w : workers_) {
    if (w->proc.stdout_fd >= 0) {
      fds.push_back({w->proc.stdout_fd, POLLIN, 0});
      owners.push_back({w.get(), Stream::kStdout});
    }
    if (w->proc.stderr_fd >= 0) {
      fds.push_back({w->proc.stderr_fd, POLLIN, 0});
      owners.push_back({w.get(), Stream::kStderr});
    }
  }
}

Status Job::OpenOutputFiles(Worker& w, int size, bool append) {
  std::error_code ec;
  std::string dir = RankOutputDir(options_.output_dir, w.rank, size);
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::PermissionDenied(
        "--output-filename", "cannot create " + dir + ": " + ec.message());
  }
  for (auto [name, fd] :
       {std::pair{"/stdout", &w.out_file}, std::pair{"/stderr", &w.err_file}}) {
    std::string path = dir + name;
    // An elastic job's later workers may carry a rank an earlier one had:
    // they add to its files.
    *fd = open(path.c_str(),
               O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC),
               0644);
    if (*fd < 0) {
      return Status::PermissionDenied(
          "--output-filename",
          "cannot write " + path + ": " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

Status Job::OpenStepOrWorkerFiles(Worker& w, int size) {
  if (!options_.step) return OpenOutputFiles(w, size, false);
  // A step: each task its rank's files, as if it were a worker of its own.
  const int tasks = static_cast<int>(options_.step->hosts.size());
  for (int t = 0; t < tasks; ++t) {
    Worker task;
    task.rank = t;
    HVD_RETURN_IF_ERROR(OpenOutputFiles(task, tasks, false));
    w.task_out_files.push_back(task.out_file);
    w.task_err_files.push_back(task.err_file);
  }
  return Status::Ok();
}

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

void Job::ReadOutput(Worker& w, int fd, Stream stream) {
  char buf[65536];
  LineSplitter& lines = stream == Stream::kStdout ? w.out_lines : w.err_lines;
  int out_fd = stream == Stream::kStdout ? STDOUT_FILENO : STDERR_FILENO;
  int file = stream == Stream::kStdout ? w.out_file : w.err_file;
  auto write_out = [&](int rank, const Piece& piece, int to_file) {
    // One write per piece: lines of different ranks never mix. The
    // --output-filename files hold what the terminal gets, as Horovod's.
    const std::string text =
        PrefixLine(rank, stream, piece, options_.timestamps ? Timestamp() : "");
    WriteAll(out_fd, text);
    if (to_file >= 0) WriteAll(to_file, text);
  };
  auto emit = [&](const Piece& piece) {
    if (!options_.step) return write_out(w.rank, piece, file);
    EmitStepPiece(w, stream, piece, write_out);
  };
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      lines.Feed(std::string_view(buf, static_cast<size_t>(n)), emit);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // EOF or error: the stream is over.
    lines.Flush(emit);
    close(fd);
    (stream == Stream::kStdout ? w.proc.stdout_fd : w.proc.stderr_fd) = -1;
    return;
  }
}

template <typename WriteOut>
void Job::EmitStepPiece(Worker& w, Stream stream, const Piece& piece,
                        const WriteOut& write_out) {
  const StepOutput::Line line = step_->Take(stream, piece);
  if (line.task < 0) {
    // The program's own line: passed on as it is.
    WriteAll(STDERR_FILENO, std::string(piece.text) + std::string(piece.end));
    return;
  }
  if (line.exit_code) {
    const int code = *line.exit_code;
    if (!failed_task_ && !stopping_) {
      failed_task_ = line.task;
      exit_code_ = code;
      BeginStop("rank " + std::to_string(line.task) + " on host " +
                options_.step->hosts[line.task] +
                (code > 128 ? " was killed by signal " +
                                  std::to_string(code - 128) + ", exit code "
                            : " exited with code ") +
                std::to_string(code));
    }
    return;
  }
  Piece rest = piece;
  rest.text = line.text;
  const std::vector<int>& files =
      stream == Stream::kStdout ? w.task_out_files : w.task_err_files;
  write_out(line.task, rest, files.empty() ? -1 : files[line.task]);
}

// Only while a join timeout is set (the default, 0, has none): the loop
// must not wake at a deadline it then ignores, or it spins a core.
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

void Job::DrainWorker(Worker& w) {
  auto until = Clock::now() + std::chrono::seconds(2);
  while (w.proc.stdout_fd >= 0 || w.proc.stderr_fd >= 0) {
    std::vector<pollfd> fds;
    std::vector<Stream> streams;
    if (w.proc.stdout_fd >= 0) {
      fds.push_back({w.proc.stdout_fd, POLLIN, 0});
      streams.push_back(Stream::kStdout);
    }
    if (w.proc.stderr_fd >= 0) {
      fds.push_back({w.proc.stderr_fd, POLLIN, 0});
      streams.push_back(Stream::kStderr);
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    until - Clock::now())
                    .count();
    if (left <= 0) return;
    int n = poll(fds.data(), fds.size(), static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents) ReadOutput(w, fds[i].fd, streams[i]);
    }
  }
}

void Job::Drain() {
  // Every worker is gone; end whatever they left in their groups, then drain
  // the pipes (their writers are dead now, so EOF comes promptly).
  KillAll(SIGKILL, false);
  auto drain_until = Clock::now() + std::chrono::seconds(2);
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Worker*, Stream>> owners;
    CollectOutputFds(fds, owners);
    if (fds.empty()) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    drain_until - Clock::now())
                    .count();
    if (left <= 0) break;
    int n = poll(fds.data(), fds.size(), static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents)
        ReadOutput(*owners[i].first, fds[i].fd, owners[i].second);
    }
  }
  for (auto& w : workers_) {
    for (int fd :
         {w->proc.stdout_fd, w->proc.stderr_fd, w->out_file, w->err_file}) {
      if (fd >= 0) close(fd);
    }
    for (int fd : w->task_out_files) close(fd);
    for (int fd : w->task_err_files) close(fd);
  }
}

int Job::Run(const std::vector<ProcessSpec>& specs,
             const std::vector<std::string>& hosts) {
  if (options_.step) {
    step_.emplace(static_cast<int>(options_.step->hosts.size()),
                  *options_.step->format);
  }
  for (size_t r = 0; r < specs.size(); ++r) {
    auto w = std::make_unique<Worker>();
    w->rank = static_cast<int>(r);
    w->host = hosts[r];
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
        ", Exit code: " + std::to_string(exit_code_) + ")");
  }
  return exit_code_;
}

}  // namespace

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
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP})
    sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

int Supervisor::Run(const std::vector<ProcessSpec>& specs,
                    const std::vector<std::string>& hosts, Spawner& spawner) {
  Job job(options_, spawner, nullptr);
  return job.Run(specs, hosts);
}

int Supervisor::RunElastic(WorkerDriver& driver, Spawner& spawner) {
  Job job(options_, spawner, &driver);
  return job.Run({}, {});
}

}  // namespace hvd::launcher
