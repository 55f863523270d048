// What hvd-ssh-exec and hvd-remote-exec say to each other: a worker's
// launch, and the frames a host's shared connection carries them in.
#include "launcher/remote_protocol.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hvd::launcher {
namespace {

TEST(RemoteProtocolTest, LaunchRoundTripsWithAnyBytes) {
  RemoteLaunch launch{"/work dir",
                      {"A=1", "PEM=-----\nkey\n"},
                      {"python3", "-c", "print('hi')\n"}};
  const std::string wire = EncodeRemoteLaunch(launch) + "TERM\n";
  RemoteLaunch got;
  auto used = DecodeRemoteLaunch(wire, &got);
  ASSERT_TRUE(used.ok()) << used.status().ToString();
  EXPECT_EQ(*used, wire.size() - 5);
  EXPECT_EQ(got, launch);
}

// Frames back to back, cut anywhere: each comes out whole, in order, and
// only once all of its bytes are there.
TEST(RemoteProtocolTest, FramesComeOutWholeWhereverTheBytesAreCut) {
  const std::vector<Frame> sent = {
      {FrameKind::kLaunch, 0, EncodeRemoteLaunch({"", {}, {"true"}})},
      {FrameKind::kStdout, 7, std::string("line\n\0\xff", 7)},
      {FrameKind::kControl, 1u << 31, "TERM\n"},
      {FrameKind::kHangUp, 3, ""},
      {FrameKind::kExit, 300, "143"},
  };
  std::string wire;
  for (const Frame& f : sent) wire += EncodeFrame(f.kind, f.worker, f.bytes);
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    std::vector<Frame> got;
    std::string buffer;
    for (std::string_view piece : {std::string_view(wire).substr(0, cut),
                                   std::string_view(wire).substr(cut)}) {
      buffer += piece;
      for (;;) {
        Frame f;
        auto used = DecodeFrame(buffer, &f);
        ASSERT_TRUE(used.ok()) << used.status().ToString();
        if (*used == 0) break;
        buffer.erase(0, *used);
        got.push_back(f);
      }
    }
    EXPECT_TRUE(buffer.empty()) << "cut at " << cut;
    EXPECT_EQ(got, sent) << "cut at " << cut;
  }
}

TEST(RemoteProtocolTest, UnknownFrameKindOrHugeLengthIsAnError) {
  Frame f;
  EXPECT_FALSE(DecodeFrame("Z", &f).ok());
  std::string huge = EncodeFrame(FrameKind::kStdout, 1, "");
  huge[5] = '\x7f';  // length 0x7f000000
  EXPECT_FALSE(DecodeFrame(huge, &f).ok());
  auto partial =
      DecodeFrame(EncodeFrame(FrameKind::kExit, 1, "0").substr(0, 4), &f);
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(*partial, 0u);
}

}  // namespace
}  // namespace hvd::launcher
