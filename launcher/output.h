// Worker output, split into pieces and prefixed with the rank. Pure.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace hvd::launcher {

// A piece of a worker's stream: its text and what ended it ("\n", "\r",
// or nothing: a last line without a newline, or a cut). A "\n" right after
// a "\r" continues that line (`continues`): it ends a "\r\n".
struct Piece {
  std::string_view text;
  std::string_view end;
  bool continues = false;
};

// Splits a byte stream into pieces as Horovod does: each ends at '\n' or at
// '\r' (a progress bar redraws with it, and the piece goes out at once),
// keeping the end, so the stream is passed on unchanged but for prefixes.
// A piece longer than kMaxLine is cut so one worker cannot grow memory.
class LineSplitter {
 public:
  static constexpr size_t kMaxLine = 64 * 1024;
  using Emit = std::function<void(const Piece& piece)>;

  void Feed(std::string_view data, const Emit& emit);
  // Emits a last piece that had no end (at EOF); no newline is added.
  void Flush(const Emit& emit);

 private:
  std::string pending_;
  bool after_cr_ = false;
};

enum class Stream { kStdout, kStderr };

// "[RANK]<stdout>:TEXT" and the piece's own end — Horovod's format, no
// space after the colon; a non-empty `timestamp` goes in front, as
// Horovod's, with nothing between. A continuing piece is its end alone.
std::string PrefixLine(int rank, Stream stream, const Piece& piece,
                       std::string_view timestamp = {});

// Horovod's timestamp (Python's time.asctime in local time):
// "Fri Dec  4 04:38:12 2026".
std::string Timestamp();

// "DIR/rank.N" with N zero-padded to the width of the largest rank, as
// Horovod's --output-filename lays them out.
std::string RankOutputDir(const std::string& dir, int rank, int size);

}  // namespace hvd::launcher
