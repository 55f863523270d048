// Whether two short byte strings are equal, inline: a name, a shape, the
// head of an engine message (a few dozen bytes), compared on every call of
// the blocking allreduce. Up to 64 bytes it is a few word loads; glibc's
// memcmp is a call with its own dispatch, and its three calls were 5 % of
// a 4-byte allreduce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hvd {

namespace internal {
template <typename T>
inline T LoadWord(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
}  // namespace internal

// As memcmp(a, b, n) == 0.
inline bool EqualBytes(const void* a, const void* b, size_t n) {
  using internal::LoadWord;
  const auto* x = static_cast<const unsigned char*>(a);
  const auto* y = static_cast<const unsigned char*>(b);
  if (n > 64) return std::memcmp(a, b, n) == 0;
  if (n >= 8) {
    // Word by word, the last word overlapping the one before.
    uint64_t differ = 0;
    for (size_t i = 0; i + 8 < n; i += 8) {
      differ |= LoadWord<uint64_t>(x + i) ^ LoadWord<uint64_t>(y + i);
    }
    differ |= LoadWord<uint64_t>(x + n - 8) ^ LoadWord<uint64_t>(y + n - 8);
    return differ == 0;
  }
  if (n >= 4) {
    return ((LoadWord<uint32_t>(x) ^ LoadWord<uint32_t>(y)) |
            (LoadWord<uint32_t>(x + n - 4) ^ LoadWord<uint32_t>(y + n - 4))) ==
           0;
  }
  for (size_t i = 0; i < n; ++i) {
    if (x[i] != y[i]) return false;
  }
  return true;
}

}  // namespace hvd
