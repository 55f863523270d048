#include "common/copy_bytes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace hvd {
namespace {

// Every size up to past the inline moves, and around the loop's steps
// (head, 128-byte turns, tail), from every alignment of source and
// destination: the bytes memcpy gives, and nothing written outside the
// destination.
TEST(CopyBytesTest, CopiesWhatMemcpyCopiesAndNothingMore) {
  std::vector<uint8_t> src(9000), dst(9100), want(9100);
  for (size_t i = 0; i < src.size(); ++i) {
    src[i] = static_cast<uint8_t>(i * 131 + 7);
  }
  std::vector<size_t> sizes = {2047, 2048, 2049, 2111, 2112};
  for (size_t n = 0; n <= 80; ++n) sizes.push_back(n);  // the inline moves
  for (size_t n = 4000; n < 4200; n += 7) sizes.push_back(n);
  sizes.push_back(8832);
  for (size_t n : sizes) {
    for (size_t s_off = 0; s_off < 40; s_off += 13) {
      for (size_t d_off = 0; d_off < 40; d_off += 5) {
        std::fill(dst.begin(), dst.end(), 0xAB);
        want = dst;
        std::memcpy(want.data() + d_off, src.data() + s_off, n);
        CopyBytes(dst.data() + d_off, src.data() + s_off, n);
        ASSERT_EQ(dst, want)
            << "n " << n << " from +" << s_off << " to +" << d_off;
      }
    }
  }
}

TEST(CopyBytesTest, ALargeCopyOfSeveralMegabytes) {
  std::vector<uint32_t> src(3 << 20), dst(3 << 20, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint32_t>(i);
  CopyBytes(dst.data() + 1, src.data(), (src.size() - 1) * 4);
  EXPECT_EQ(dst[0], 0u);
  for (size_t i = 1; i < dst.size(); ++i) ASSERT_EQ(dst[i], i - 1) << i;
}

}  // namespace
}  // namespace hvd
