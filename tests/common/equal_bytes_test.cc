#include "common/equal_bytes.h"

#include <gtest/gtest.h>

#include <vector>

namespace hvd {
namespace {

// Every length up to past the inline cases, from every alignment: equal
// strings are equal, and a change of any one byte (or one bit) is seen.
TEST(EqualBytesTest, SeesAnyDifferentByteAtEveryLength) {
  std::vector<unsigned char> a(200), b(200);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<unsigned char>(i * 7 + 3);
  for (size_t n = 0; n <= 100; ++n) {
    for (size_t off = 0; off < 8; ++off) {
      b = a;
      ASSERT_TRUE(EqualBytes(a.data() + off, b.data() + off, n))
          << n << " bytes at " << off;
      for (size_t at = 0; at < n; ++at) {
        for (unsigned char bit : {1, 128}) {
          b[off + at] ^= bit;
          ASSERT_FALSE(EqualBytes(a.data() + off, b.data() + off, n))
              << n << " bytes at " << off << ", byte " << at << " differs";
          b[off + at] ^= bit;
        }
      }
      // Bytes outside the n compared do not count.
      b[off + n] ^= 1;
      if (off > 0) b[off - 1] ^= 1;
      ASSERT_TRUE(EqualBytes(a.data() + off, b.data() + off, n))
          << n << " bytes at " << off << " with their neighbours changed";
    }
  }
}

}  // namespace
}  // namespace hvd
