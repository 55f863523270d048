// Worker output, split into lines and prefixed with the rank. Pure.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace hvd::launcher {

// Splits a byte stream into lines. '\n' ends a line, and so does '\r'
// (progress bars redraw with it), with "\r\n" counting once. A line longer
// than kMaxLine is cut into pieces so one worker cannot grow memory.
class LineSplitter {
 public:
  static constexpr size_t kMaxLine = 64 * 1024;
  using Emit = std::function<void(std::string_view line)>;

  void Feed(std::string_view data, const Emit& emit);
  // Emits a last piece that had no line end (at EOF).
  void Flush(const Emit& emit);

 private:
  std::string pending_;
  bool after_cr_ = false;
};

enum class Stream { kStdout, kStderr };

// "[RANK]<stdout>:LINE\n" — Horovod's format, no space after the colon.
std::string PrefixLine(int rank, Stream stream, std::string_view line);

}  // namespace hvd::launcher
