#include "launcher/output.h"

#include <gtest/gtest.h>

#include <regex>

namespace hvd::launcher {
namespace {

// The whole prefixed output of rank 0's stdout for `chunks`.
std::string Render(const std::vector<std::string>& chunks, bool flush = true) {
  LineSplitter s;
  std::string out;
  auto emit = [&](const Piece& p) { out += PrefixLine(0, Stream::kStdout, p); };
  for (const std::string& c : chunks) s.Feed(c, emit);
  if (flush) s.Flush(emit);
  return out;
}

TEST(LineSplitterTest, LinesAcrossChunks) {
  EXPECT_EQ(Render({"hel", "lo\nwor", "ld\n"}),
            "[0]<stdout>:hello\n[0]<stdout>:world\n");
}

// As Horovod: a "\r" stays in the stream, so a progress bar redraws in
// place, and each redraw is prefixed once.
TEST(LineSplitterTest, CarriageReturnsStayInTheStream) {
  EXPECT_EQ(Render({"10%\r20%\r", "done\n"}),
            "[0]<stdout>:10%\r[0]<stdout>:20%\r[0]<stdout>:done\n");
  // "\r\n" is one line end, whichever chunk its "\n" arrives in.
  EXPECT_EQ(Render({"a\r", "\nb\r\n"}), "[0]<stdout>:a\r\n[0]<stdout>:b\r\n");
}

TEST(LineSplitterTest, EmptyLinesAreKept) {
  EXPECT_EQ(Render({"\n\nx\n"}), "[0]<stdout>:\n[0]<stdout>:\n[0]<stdout>:x\n");
}

// No newline is added to a last line that had none.
TEST(LineSplitterTest, LastLineKeepsItsMissingNewline) {
  EXPECT_EQ(Render({"a\nb"}, false), "[0]<stdout>:a\n");
  EXPECT_EQ(Render({"a\nb"}, true), "[0]<stdout>:a\n[0]<stdout>:b");
}

TEST(LineSplitterTest, OverlongLinesAreCut) {
  std::string big(LineSplitter::kMaxLine + 10, 'x');
  std::vector<Piece> pieces;
  std::vector<std::string> texts;
  LineSplitter s;
  s.Feed(big + "\n", [&](const Piece& p) {
    texts.emplace_back(p.text);
    pieces.push_back(p);
  });
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_EQ(texts[0].size(), LineSplitter::kMaxLine);
  EXPECT_EQ(texts[1].size(), 10u);
}

TEST(PrefixLineTest, HorovodFormat) {
  EXPECT_EQ(PrefixLine(3, Stream::kStdout, Piece{"hello", "\n"}),
            "[3]<stdout>:hello\n");
  EXPECT_EQ(PrefixLine(0, Stream::kStderr, Piece{"", "\n"}), "[0]<stderr>:\n");
  // Horovod puts its timestamp right before the bracket.
  EXPECT_EQ(PrefixLine(1, Stream::kStdout, Piece{"x", "\n"},
                       "Fri Dec  4 04:38:12 2026"),
            "Fri Dec  4 04:38:12 2026[1]<stdout>:x\n");
}

TEST(TimestampTest, PythonsAsctimeFormat) {
  EXPECT_TRUE(std::regex_match(
      Timestamp(),
      std::regex(R"((Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ 0-9]\d )"
                 R"(\d\d:\d\d:\d\d \d{4})")))
      << Timestamp();
}

}  // namespace
}  // namespace hvd::launcher
