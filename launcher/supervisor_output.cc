// The workers' output as the supervisor passes it on: each line under its
// rank's prefix, one write per piece, copied to --output-filename's files;
// a step's tasks told apart by their program's labels.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "launcher/supervised_job.h"

namespace hvd::launcher::supervision {

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

}  // namespace hvd::launcher::supervision
