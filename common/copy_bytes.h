// Copying bytes between buffers that do not overlap, as memcpy does, but
// past 2 KiB with a loop of 32-byte vector moves where the CPU has AVX2.
// glibc's memcpy hands copies of 2 KiB and more to `rep movsb`, which on
// the AMD machines measured (a Firecracker VM) runs 10-35 % slower than
// vector moves: the shared-memory allreduce of 4 KiB 0.85 -> 0.58 us, of
// 256 KiB to 16 MiB about 10 % faster, with the same copies done by a
// vector loop. Small copies go to memcpy, whose own vector path they take.
#pragma once

#include <cstddef>
#include <cstring>

namespace hvd {

namespace internal {
// Whether the CPU has AVX2 (read once), and the vector loop.
bool CopyHasAvx2();
void CopyVector(void* to, const void* from, size_t n);
}  // namespace internal

// Below this, memcpy's own vector path (glibc's `rep movsb` starts at
// 2112 bytes here).
inline constexpr size_t kCopyVectorFrom = 2048;

inline void CopyBytes(void* to, const void* from, size_t n) {
  if (n < kCopyVectorFrom || !internal::CopyHasAvx2()) {
    std::memcpy(to, from, n);
    return;
  }
  internal::CopyVector(to, from, n);
}

}  // namespace hvd
