#include "launcher/output.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace hvd::launcher {

void LineSplitter::Feed(std::string_view data, const Emit& emit) {
  for (char c : data) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // "\r\n" ends one line, not two
    }
    if (c == '\n' || c == '\r') {
      emit(pending_);
      pending_.clear();
      after_cr_ = (c == '\r');
      continue;
    }
    pending_.push_back(c);
    if (pending_.size() >= kMaxLine) {
      emit(pending_);
      pending_.clear();
    }
  }
}

void LineSplitter::Flush(const Emit& emit) {
  if (!pending_.empty()) emit(pending_);
  pending_.clear();
  after_cr_ = false;
}

std::string PrefixLine(int rank, Stream stream, std::string_view line,
                       std::string_view timestamp) {
  std::string out;
  out.reserve(line.size() + 48);
  if (!timestamp.empty()) {
    out += timestamp;
    out += ' ';
  }
  out += '[';
  out += std::to_string(rank);
  out += stream == Stream::kStdout ? "]<stdout>:" : "]<stderr>:";
  out += line;
  out += '\n';
  return out;
}

std::string Timestamp() {
  auto now = std::chrono::system_clock::now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  int ms =
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                           now.time_since_epoch())
                           .count() %
                       1000);
  std::tm tm;
  gmtime_r(&secs, &tm);
  char buf[40];
  size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%03dZ", ms);
  return buf;
}

std::string RankOutputDir(const std::string& dir, int rank, int size) {
  size_t width = std::to_string(std::max(size - 1, 0)).size();
  std::string n = std::to_string(rank);
  if (n.size() < width) n.insert(0, width - n.size(), '0');
  return dir + "/rank." + n;
}

}  // namespace hvd::launcher
