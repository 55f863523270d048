#include "launcher/output.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace hvd::launcher {

void LineSplitter::Feed(std::string_view data, const Emit& emit) {
  for (char c : data) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') {  // "\r\n": the line went out with its "\r"
        emit(Piece{{}, "\n", true});
        continue;
      }
    }
    if (c == '\n' || c == '\r') {
      emit(Piece{pending_, c == '\n' ? "\n" : "\r"});
      pending_.clear();
      after_cr_ = (c == '\r');
      continue;
    }
    pending_.push_back(c);
    if (pending_.size() >= kMaxLine) {
      emit(Piece{pending_, {}});
      pending_.clear();
    }
  }
}

void LineSplitter::Flush(const Emit& emit) {
  if (!pending_.empty()) emit(Piece{pending_, {}});
  pending_.clear();
  after_cr_ = false;
}

std::string PrefixLine(int rank, Stream stream, const Piece& piece,
                       std::string_view timestamp) {
  if (piece.continues) return std::string(piece.end);
  std::string out;
  out.reserve(piece.text.size() + 48);
  out += timestamp;
  out += '[';
  out += std::to_string(rank);
  out += stream == Stream::kStdout ? "]<stdout>:" : "]<stderr>:";
  out += piece.text;
  out += piece.end;
  return out;
}

std::string Timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm;
  localtime_r(&now, &tm);
  char buf[40];
  std::strftime(buf, sizeof(buf), "%a %b %e %H:%M:%S %Y", &tm);
  return buf;
}

std::string RankOutputDir(const std::string& dir, int rank, int size) {
  size_t width = std::to_string(std::max(size - 1, 0)).size();
  std::string n = std::to_string(rank);
  if (n.size() < width) n.insert(0, width - n.size(), '0');
  return dir + "/rank." + n;
}

}  // namespace hvd::launcher
