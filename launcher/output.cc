#include "launcher/output.h"

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

std::string PrefixLine(int rank, Stream stream, std::string_view line) {
  std::string out;
  out.reserve(line.size() + 20);
  out += '[';
  out += std::to_string(rank);
  out += stream == Stream::kStdout ? "]<stdout>:" : "]<stderr>:";
  out += line;
  out += '\n';
  return out;
}

}  // namespace hvd::launcher
