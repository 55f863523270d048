#include "runtime/timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace hvd::runtime {

Timeline::~Timeline() { Close(); }

Status Timeline::Open(const std::string& path, bool mark_cycles) {
  std::lock_guard<std::mutex> control(control_mu_);
  if (enabled()) {
    return Status::FailedPrecondition(
        "timeline",
        "already recording to '" + path_ + "'; call stop_timeline() first");
  }
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::PermissionDenied(
        "timeline '" + path + "'",
        std::string("cannot be written: ") + std::strerror(errno));
  }
  if (write(fd, "[\n]", 3) != 3) {
    int e = errno;
    close(fd);
    return Status::Internal("timeline", std::strerror(e));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fd_ = fd;
    stop_ = false;
    first_ = true;
    pids_.clear();
    queue_.clear();
    queued_ = written_ = 0;
  }
  path_ = path;
  mark_cycles_ = mark_cycles;
  start_ = std::chrono::steady_clock::now();
  writer_ = std::thread([this] { Writer(); });
  open_.store(true, std::memory_order_release);
  return Status::Ok();
}

void Timeline::Close() {
  std::lock_guard<std::mutex> control(control_mu_);
  if (!enabled()) return;
  open_.store(false, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;  // Emit adds nothing from here on
  }
  cv_.notify_one();
  writer_.join();
  close(fd_);
  std::lock_guard<std::mutex> lock(mu_);
  fd_ = -1;
}

int64_t Timeline::Now() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now() - start_)
      .count();
}

void Timeline::Emit(const std::string& tensor, const std::string& name,
                    char phase, const std::string& extra) {
  if (!enabled()) return;
  int64_t ts = Now();
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ < 0 || stop_) return;  // closed meanwhile
  auto [it, added] = pids_.emplace(tensor, static_cast<int>(pids_.size()) + 1);
  int pid = it->second;
  if (added) {
    queue_.push_back(R"({"name": "process_name", "ph": "M", "pid": )" +
                     std::to_string(pid) + R"(, "args": {"name": )" +
                     nlohmann::json(tensor).dump() + "}}");
  }
  std::string e = R"({"name": )" + nlohmann::json(name).dump() +
                  R"(, "ph": ")" + std::string(1, phase) + R"(", "ts": )" +
                  std::to_string(ts) + R"(, "pid": )" + std::to_string(pid) +
                  R"(, "tid": 0)";
  if (phase == 'i') e += R"(, "s": "p")";
  e += extra + "}";
  queue_.push_back(std::move(e));
  queued_ = queue_.size() + written_;
  cv_.notify_one();
}

void Timeline::NegotiateStart(const std::string& tensor,
                              const std::string& op) {
  Emit(tensor, "NEGOTIATE_" + op, 'B');
}
void Timeline::NegotiateRankReady(const std::string& tensor, int rank) {
  Emit(tensor, std::to_string(rank), 'i');
}
void Timeline::NegotiateEnd(const std::string& tensor) {
  Emit(tensor, "", 'E');
}
void Timeline::Start(const std::string& tensor, const std::string& op) {
  Emit(tensor, op, 'B');
}
void Timeline::ActivityStart(const std::string& tensor,
                             const std::string& activity) {
  Emit(tensor, activity, 'B');
}
void Timeline::ActivityEnd(const std::string& tensor) { Emit(tensor, "", 'E'); }
void Timeline::End(const std::string& tensor) { Emit(tensor, "", 'E'); }
void Timeline::MarkCycle() { Emit("cycles", "CYCLE_START", 'i'); }

void Timeline::Flush() {
  if (!enabled()) return;
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t target = queued_;
  flushed_.wait(lock, [&] { return written_ >= target; });
}

void Timeline::Writer() {
  off_t end = 3;  // the file is "[\n]"; new events go before the bracket
  for (;;) {
    std::vector<std::string> batch;
    bool stop;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      batch.swap(queue_);
      stop = stop_;
    }
    if (!batch.empty()) {
      std::string text;
      for (const std::string& e : batch) {
        text += first_ ? "" : ",\n";
        text += e;
        first_ = false;
      }
      text += "\n]";
      // Overwrite the closing bracket: the file stays valid JSON.
      ssize_t n = pwrite(fd_, text.data(), text.size(), end - 1);
      if (n == static_cast<ssize_t>(text.size())) {
        end += static_cast<off_t>(text.size()) - 1;
      }
      std::lock_guard<std::mutex> lock(mu_);
      written_ += batch.size();
    }
    flushed_.notify_all();
    if (stop) {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) return;
    }
  }
}

}  // namespace hvd::runtime
