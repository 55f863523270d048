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
// A non-empty `timestamp` goes in front, followed by a space.
std::string PrefixLine(int rank, Stream stream, std::string_view line,
                       std::string_view timestamp = {});

// "2026-12-02T18:20:00.123Z": UTC, milliseconds, ISO 8601.
std::string Timestamp();

// "DIR/rank.N" with N zero-padded to the width of the largest rank, as
// Horovod's --output-filename lays them out.
std::string RankOutputDir(const std::string& dir, int rank, int size);

}  // namespace hvd::launcher
