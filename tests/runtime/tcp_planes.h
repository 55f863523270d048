// TCP control planes for tests: `size` ranks as threads of this process,
// each connected through `store` with the options `options(rank)` gives.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "runtime/transport/tcp/tcp_control.h"
#include "tests/runtime/memory_store.h"

namespace hvd::runtime {

inline std::vector<std::unique_ptr<ControlPlane>> TcpPlanes(
    int size, MemoryStore& store,
    const std::function<ControlOptions(int)>& options) {
  std::vector<std::unique_ptr<ControlPlane>> planes(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      auto p = CreateTcpControlPlane(options(r), store);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      planes[r] = std::move(*p);
    });
  }
  for (auto& t : threads) t.join();
  return planes;
}

}  // namespace hvd::runtime
