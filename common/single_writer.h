// Adding to an atomic that only one thread at a time writes (whoever holds
// the lock that orders its writers, or the one thread that owns it), while
// any thread may read it: a load and a store, no locked instruction. A
// locked add on a hot path (a small allreduce is a fraction of a
// microsecond) costs as much as the work it counts.
#pragma once

#include <atomic>

namespace hvd {

template <typename T>
void SingleWriterAdd(std::atomic<T>& a, T by,
                     std::memory_order order = std::memory_order_relaxed) {
  a.store(a.load(std::memory_order_relaxed) + by, order);
}

}  // namespace hvd
