#include "launcher/output.h"

#include <gtest/gtest.h>

namespace hvd::launcher {
namespace {

std::vector<std::string> Split(const std::vector<std::string>& chunks,
                               bool flush = true) {
  LineSplitter s;
  std::vector<std::string> lines;
  auto emit = [&](std::string_view l) { lines.emplace_back(l); };
  for (const std::string& c : chunks) s.Feed(c, emit);
  if (flush) s.Flush(emit);
  return lines;
}

TEST(LineSplitterTest, LinesAcrossChunks) {
  EXPECT_EQ(Split({"hel", "lo\nwor", "ld\n"}),
            (std::vector<std::string>{"hello", "world"}));
}

TEST(LineSplitterTest, CarriageReturnPiecesAreLines) {
  EXPECT_EQ(Split({"10%\r20%\r", "done\r\n", "next\n"}),
            (std::vector<std::string>{"10%", "20%", "done", "next"}));
  // "\r" at a chunk end followed by "\n" in the next is still one end.
  EXPECT_EQ(Split({"a\r", "\nb\n"}), (std::vector<std::string>{"a", "b"}));
}

TEST(LineSplitterTest, EmptyLinesAreKept) {
  EXPECT_EQ(Split({"\n\nx\n"}), (std::vector<std::string>{"", "", "x"}));
}

TEST(LineSplitterTest, LastLineWithoutNewlineIsFlushed) {
  EXPECT_EQ(Split({"a\nb"}, false), std::vector<std::string>{"a"});
  EXPECT_EQ(Split({"a\nb"}, true), (std::vector<std::string>{"a", "b"}));
}

TEST(LineSplitterTest, OverlongLinesAreCut) {
  std::string big(LineSplitter::kMaxLine + 10, 'x');
  auto lines = Split({big + "\n"});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].size(), LineSplitter::kMaxLine);
  EXPECT_EQ(lines[1].size(), 10u);
}

TEST(PrefixLineTest, HorovodFormat) {
  EXPECT_EQ(PrefixLine(3, Stream::kStdout, "hello"), "[3]<stdout>:hello\n");
  EXPECT_EQ(PrefixLine(0, Stream::kStderr, ""), "[0]<stderr>:\n");
}

}  // namespace
}  // namespace hvd::launcher
