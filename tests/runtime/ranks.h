// Ranks as threads for runtime tests: a real rendezvous server on
// 127.0.0.1:0, one job, and one runtime::Context per thread connected over
// real Gloo TCP.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous/server.h"
#include "runtime/context.h"
#include "runtime/engine/request.h"

namespace hvd::runtime {

// A real rendezvous server on 127.0.0.1:0 with one job of `size` slots on
// "localhost", and each slot's worker configuration.
class TestJob {
 public:
  explicit TestJob(int size) : TestJob({{"localhost", size}}) {}
  // Slots on named hosts (each rank's Config says its host).
  explicit TestJob(std::vector<rendezvous::HostSlots> hosts,
                   bool elastic = false)
      : hosts_(hosts) {
    int size = 0;
    for (const auto& h : hosts) size += h.slots;
    rendezvous::ServerOptions options;
    options.admin_token = "admin";
    auto server = rendezvous::RendezvousServer::Start(options);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    if (!server.ok()) return;
    server_ = std::move(*server);
    auto job = server_->table().CreateJob(hosts, size, elastic);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    if (job.ok()) job_ = *job;
  }
  bool ok() const { return server_ && !job_.job_id.empty(); }
  const std::string& job_id() const { return job_.job_id; }
  rendezvous::JobTable& table() { return server_->table(); }

  WorkerConfig Config(int slot) const {
    WorkerConfig c;
    c.launched = true;
    c.rendezvous_addr = server_->address();
    c.job_id = job_.job_id;
    c.job_token = job_.token;
    // Slot `slot` of the job, counted across hosts in order.
    c.host = hosts_[0].host;
    c.slot = slot;
    for (const auto& h : hosts_) {
      if (c.slot < h.slots) {
        c.host = h.host;
        break;
      }
      c.slot -= h.slots;
    }
    c.start_timeout = std::chrono::milliseconds(20000);
    c.gloo_timeout = std::chrono::milliseconds(20000);
    // Meeting the peers keeps 20 s where a test shortens gloo_timeout to
    // see a collective fail fast (threads of a loaded machine start late).
    c.join_timeout = std::chrono::milliseconds(20000);
    return c;
  }

 private:
  std::vector<rendezvous::HostSlots> hosts_;
  std::unique_ptr<rendezvous::RendezvousServer> server_;
  rendezvous::CreatedJob job_;
};

// The stall inspector's warnings (rank 0's), with a warning after 300 ms
// and the job stopped after 1.2 s: Configure each rank with it.
class StallWarnings {
 public:
  void Configure(WorkerConfig& c) {
    c.engine.stall.warning = std::chrono::milliseconds(300);
    c.engine.stall.shutdown = std::chrono::milliseconds(1200);
    c.engine.stall.on_warning = [this](const std::string& w) {
      std::lock_guard<std::mutex> lock(mu_);
      said_.push_back(w);
    };
  }
  std::vector<std::string> said() {
    std::lock_guard<std::mutex> lock(mu_);
    return said_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> said_;
};

// A float32 sum allreduce of `count` elements named `name`.
inline Request AllreduceRequest(const std::string& name, int64_t count) {
  Request r;
  r.name = name;
  r.count = count;
  return r;
}

// Runs `body(context, rank)` on `size` ranks; `tune` may adjust each rank's
// configuration first.
inline void RunRanks(int size, const std::function<void(Context&, int)>& body,
                     const std::function<void(WorkerConfig&)>& tune = nullptr) {
  TestJob job(size);
  ASSERT_TRUE(job.ok());
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      WorkerConfig c = job.Config(r);
      if (tune) tune(c);
      auto ctx = Context::Create(c);
      ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
      body(**ctx, r);
    });
  }
  for (auto& t : threads) t.join();
}

// The same, with the engine's fusion threshold and Gloo's timeout set.
inline void RunRanks(
    int size, size_t fusion_bytes,
    const std::function<void(Context&, int)>& body,
    std::chrono::milliseconds gloo_timeout = std::chrono::milliseconds(20000),
    const std::function<void(WorkerConfig&)>& tune = nullptr) {
  RunRanks(size, body, [&](WorkerConfig& c) {
    c.gloo_timeout = gloo_timeout;
    c.engine.fusion_threshold_bytes = fusion_bytes;
    if (tune) tune(c);
  });
}

}  // namespace hvd::runtime
