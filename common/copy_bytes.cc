#include "common/copy_bytes.h"

#include <cstdint>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hvd::internal {

#if defined(__x86_64__)

bool CopyHasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// Aligns the destination, then 128 bytes a turn (four loads, four aligned
// stores), the rest through memcpy. Intrinsics, so the compiler cannot
// turn the loop back into a call of memcpy.
__attribute__((target("avx2"))) void CopyVector(void* to, const void* from,
                                                size_t n) {
  auto* d = static_cast<uint8_t*>(to);
  const auto* s = static_cast<const uint8_t*>(from);
  const size_t head = (32 - (reinterpret_cast<uintptr_t>(d) & 31)) & 31;
  if (head > 0) {
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(d),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
    d += head;
    s += head;
    n -= head;
  }
  for (; n >= 128; n -= 128, d += 128, s += 128) {
    const auto* in = reinterpret_cast<const __m256i*>(s);
    auto* out = reinterpret_cast<__m256i*>(d);
    const __m256i a = _mm256_loadu_si256(in);
    const __m256i b = _mm256_loadu_si256(in + 1);
    const __m256i c = _mm256_loadu_si256(in + 2);
    const __m256i e = _mm256_loadu_si256(in + 3);
    _mm256_store_si256(out, a);
    _mm256_store_si256(out + 1, b);
    _mm256_store_si256(out + 2, c);
    _mm256_store_si256(out + 3, e);
  }
  if (n > 0) std::memcpy(d, s, n);
}

#else

bool CopyHasAvx2() { return false; }
void CopyVector(void* to, const void* from, size_t n) {
  std::memcpy(to, from, n);
}

#endif

}  // namespace hvd::internal
