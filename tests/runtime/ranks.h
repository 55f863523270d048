// Ranks as threads for runtime tests: a real rendezvous server on
// 127.0.0.1:0, one job, and one runtime::Context per thread connected over
// real Gloo TCP.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "rendezvous/server.h"
#include "runtime/context.h"

namespace hvd::runtime {

// Runs `body(context, rank)` on `size` ranks; `tune` may adjust each rank's
// configuration first.
inline void RunRanks(int size, const std::function<void(Context&, int)>& body,
                     const std::function<void(WorkerConfig&)>& tune = nullptr) {
  rendezvous::ServerOptions options;
  options.admin_token = "admin";
  auto server = rendezvous::RendezvousServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto job = (*server)->table().CreateJob({{"localhost", size}}, size);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      WorkerConfig c;
      c.launched = true;
      c.rendezvous_addr = (*server)->address();
      c.job_id = job->job_id;
      c.job_token = job->token;
      c.host = "localhost";
      c.slot = r;
      c.start_timeout = std::chrono::milliseconds(20000);
      c.gloo_timeout = std::chrono::milliseconds(20000);
      if (tune) tune(c);
      auto ctx = Context::Create(c);
      ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
      body(**ctx, r);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace hvd::runtime
