#include "mnist/kernels.h"

#include <cmath>

// Each loop is built for AVX-512, AVX2 (x86-64 level 3) and plain x86-64,
// and the loader picks the widest the CPU has (GCC on x86-64; not under the
// sanitizers, whose instrumented ifunc resolvers run before their runtime
// is up). The example's own, as it uses libhvd's public API alone.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define HVD_MULTIVERSION \
  __attribute__((target_clones("default", "arch=x86-64-v3", "avx512f")))
#else
#define HVD_MULTIVERSION
#endif

namespace hvd::mnist {
namespace {

// MurmurHash3's 32-bit finaliser: every input bit reaches every output
// bit, which is all a dropout mask needs.
inline uint32_t Mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  x ^= x >> 16;
  return x;
}

}  // namespace

HVD_MULTIVERSION
void Dropout(const float* in, float* out, float* mask, size_t n, float rate,
             uint64_t key) {
  const float keep = 1.0f / (1.0f - rate);
  const auto threshold = static_cast<uint32_t>(
      std::fmin(static_cast<double>(rate) * 4294967296.0, 4294967295.0));
  const auto k1 = static_cast<uint32_t>(key);
  const auto k2 = static_cast<uint32_t>(key >> 32);
  for (size_t i = 0; i < n; ++i) {
    uint32_t r = Mix(Mix(static_cast<uint32_t>(i) + k1) ^ k2);
    mask[i] = r >= threshold ? keep : 0.0f;
    out[i] = in[i] * mask[i];
  }
}

HVD_MULTIVERSION
void ReluBackward(float* diff, const float* mask, const float* act, size_t n) {
  if (mask) {
    for (size_t i = 0; i < n; ++i) {
      diff[i] = act[i] > 0.0f ? diff[i] * mask[i] : 0.0f;
    }
  } else {
    for (size_t i = 0; i < n; ++i) diff[i] = act[i] > 0.0f ? diff[i] : 0.0f;
  }
}

HVD_MULTIVERSION
void AdadeltaUpdate(float* w, const float* g, float* accum_grad,
                    float* accum_var, size_t n, float lr, float rho,
                    float eps) {
  for (size_t i = 0; i < n; ++i) {
    const float ag = rho * accum_grad[i] + (1 - rho) * g[i] * g[i];
    const float update =
        g[i] * std::sqrt(accum_var[i] + eps) / std::sqrt(ag + eps);
    accum_grad[i] = ag;
    w[i] -= lr * update;
    accum_var[i] = rho * accum_var[i] + (1 - rho) * update * update;
  }
}

}  // namespace hvd::mnist
