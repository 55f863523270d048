// HVD_MULTIVERSION before a function builds it for AVX-512, AVX2 (x86-64
// level 3) and plain x86-64, and the loader picks the widest the CPU has.
// The project targets plain x86-64, whose SSE2 leaves the element loops of
// reductions and optimizers at a quarter of the width the machines we run
// on have. Loops it calls must be HVD_INLINE to share in that.
// GCC on x86-64 only; elsewhere it expands to nothing, and so under the
// sanitizers, whose instrumented ifunc resolvers would run before their
// runtime is up and crash the program as it loads.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define HVD_MULTIVERSION \
  __attribute__((target_clones("default", "arch=x86-64-v3", "avx512f")))
// For the loops a multiversioned function calls: inlined into each clone,
// so each gets that clone's instructions.
#define HVD_INLINE __attribute__((always_inline)) inline
#else
#define HVD_MULTIVERSION
#define HVD_INLINE inline
#endif
