// The NCCL backend on real GPUs: ranks as threads, one GPU each. Skips with
// the reason when this machine has no (or too few) CUDA devices.
#include "runtime/transport/nccl/nccl_backend.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <iostream>
#include <thread>

#include "common/metrics_format.h"
#include "rendezvous/client.h"
#include "rendezvous/server.h"
#include "runtime/context.h"
#include "runtime/metrics.h"
#include "runtime/store.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

void RunOnGpus(int size, const std::function<void(Backend&, int)>& body) {
  rendezvous::ServerOptions options;
  options.admin_token = "admin";
  auto server = rendezvous::RendezvousServer::Start(options);
  ASSERT_TRUE(server.ok());
  auto job = (*server)->table().CreateJob({{"localhost", size}}, size);
  ASSERT_TRUE(job.ok());
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      auto client = rendezvous::RendezvousClient::Create(
          (*server)->address(), job->job_id, job->token);
      auto store = MakeRendezvousStore(client.get(), "");
      auto backend = CreateNcclBackend({r, size, r}, *store);
      ASSERT_TRUE(backend.ok()) << backend.status().ToString();
      body(**backend, r);
    });
  }
  for (auto& t : threads) t.join();
}

class NcclTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    int devices = CudaDeviceCount();
    if (devices < GetParam()) {
      GTEST_SKIP() << "needs " << GetParam() << " CUDA device(s), found "
                   << devices << " (no GPU on this machine)";
    }
  }
};

TEST_P(NcclTest, AllreduceSumOnDeviceMemory) {
  const int size = GetParam();
  RunOnGpus(size, [&](Backend& b, int rank) {
    const size_t n = 1 << 20;
    std::vector<float> host(n, static_cast<float>(rank + 1));
    float* dev = nullptr;
    ASSERT_EQ(cudaMalloc(&dev, n * sizeof(float)), cudaSuccess);
    cudaMemcpy(dev, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    Status s = b.Allreduce(dev, n, DataType::kFloat32, ReduceOp::kSum);
    ASSERT_TRUE(s.ok()) << s.ToString();
    cudaMemcpy(host.data(), dev, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(dev);
    const float want = size * (size + 1) / 2.0f;
    for (size_t i = 0; i < n; i += 4099) ASSERT_EQ(host[i], want) << i;
  });
}

TEST_P(NcclTest, BroadcastAndBarrier) {
  const int size = GetParam();
  RunOnGpus(size, [&](Backend& b, int rank) {
    std::vector<int32_t> host(1000, rank);
    int32_t* dev = nullptr;
    ASSERT_EQ(cudaMalloc(&dev, host.size() * 4), cudaSuccess);
    cudaMemcpy(dev, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
    ASSERT_TRUE(b.Broadcast(dev, host.size() * 4, size - 1).ok());
    cudaMemcpy(host.data(), dev, host.size() * 4, cudaMemcpyDeviceToHost);
    cudaFree(dev);
    for (int32_t v : host) ASSERT_EQ(v, size - 1);
    EXPECT_TRUE(b.Barrier().ok());
  });
}

TEST_P(NcclTest, ScaledSumAveragesOnTheDevice) {
  const int size = GetParam();
  RunOnGpus(size, [&](Backend& b, int rank) {
    std::vector<float> host(4097, static_cast<float>(rank + 1));
    float* dev = nullptr;
    ASSERT_EQ(cudaMalloc(&dev, host.size() * 4), cudaSuccess);
    cudaMemcpy(dev, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
    Status s = b.ScaledSum(dev, host.size(), DataType::kFloat32, 1.0 / size);
    ASSERT_TRUE(s.ok()) << s.ToString();
    cudaMemcpy(host.data(), dev, host.size() * 4, cudaMemcpyDeviceToHost);
    cudaFree(dev);
    for (float v : host) ASSERT_FLOAT_EQ(v, (size + 1) / 2.0f);
  });
}

// The whole path: a CUDA tensor through the engine lands on NCCL.
TEST_P(NcclTest, EngineRoutesCudaTensorsToNccl) {
  const int size = GetParam();
  RunRanks(size, [&](Context& ctx, int rank) {
    ASSERT_EQ(cudaSetDevice(rank), cudaSuccess);
    std::vector<float> host(1000, static_cast<float>(rank + 1));
    float* dev = nullptr;
    ASSERT_EQ(cudaMalloc(&dev, host.size() * 4), cudaSuccess);
    cudaMemcpy(dev, host.data(), host.size() * 4, cudaMemcpyHostToDevice);
    Request r;
    r.name = "gpu.grad";
    r.count = static_cast<int64_t>(host.size());
    r.shape = {10, 100};
    r.device = rank;
    r.average = true;
    Status s = ctx.engine().Enqueue(r, dev)->Wait();
    ASSERT_TRUE(s.ok()) << s.ToString();
    cudaMemcpy(host.data(), dev, host.size() * 4, cudaMemcpyDeviceToHost);
    for (float v : host) ASSERT_FLOAT_EQ(v, (size + 1) / 2.0f);
    // Broadcast from the last rank, and a host tensor alongside.
    Request bc = r;
    bc.name = "gpu.bcast";
    bc.type = OpType::kBroadcast;
    bc.average = false;
    bc.root = size - 1;
    cudaMemcpy(dev, std::vector<float>(1000, rank).data(), 4000,
               cudaMemcpyHostToDevice);
    ASSERT_TRUE(ctx.engine().Enqueue(bc, dev)->Wait().ok());
    cudaMemcpy(host.data(), dev, 4000, cudaMemcpyDeviceToHost);
    for (float v : host) ASSERT_EQ(v, size - 1);
    cudaFree(dev);
  });
}

// HOROVOD_NUM_NCCL_STREAMS=3: a group of CUDA tensors spread over the
// streams, every result right once the handles complete.
TEST_P(NcclTest, SeveralStreamsOverlapAGroupAndEveryResultIsRight) {
  const int size = GetParam();
  RunRanks(
      size,
      [&](Context& ctx, int rank) {
        ASSERT_EQ(cudaSetDevice(rank), cudaSuccess);
        constexpr int kTensors = 8;
        const size_t n = 1 << 18;
        std::vector<float*> devs(kTensors);
        std::vector<std::pair<Request, void*>> group;
        for (int i = 0; i < kTensors; ++i) {
          ASSERT_EQ(cudaMalloc(&devs[i], n * 4), cudaSuccess);
          std::vector<float> host(n, static_cast<float>(rank + i));
          cudaMemcpy(devs[i], host.data(), n * 4, cudaMemcpyHostToDevice);
          Request r;
          r.name = "streams.grad" + std::to_string(i);
          r.count = static_cast<int64_t>(n);
          r.device = rank;
          group.emplace_back(r, devs[i]);
        }
        auto done = ctx.engine().EnqueueGroup(std::move(group));
        for (int i = 0; i < kTensors; ++i) {
          Status s = done[i]->Wait();
          ASSERT_TRUE(s.ok()) << s.ToString();
          std::vector<float> host(n);
          cudaMemcpy(host.data(), devs[i], n * 4, cudaMemcpyDeviceToHost);
          const float want = size * (size - 1) / 2.0f + size * i;
          for (size_t k = 0; k < n; k += 1021) ASSERT_EQ(host[k], want) << i;
          cudaFree(devs[i]);
        }
      },
      [](WorkerConfig& c) { c.num_nccl_streams = 3; });
}

// Once NCCL runs on a GPU the metrics report that GPU's memory (and, where
// the driver's NVML answers, its utilisation), labelled with the device.
TEST_P(NcclTest, MetricsReportTheGpu) {
  RunOnGpus(GetParam(), [&](Backend&, int) {});
  const std::string r = Metrics::Process().Report({{"rank", "0"}});
  EXPECT_GT(metrics::SumSamples(r, "hvd_gpu_memory_total_bytes"), 0) << r;
  EXPECT_GT(metrics::SumSamples(r, "hvd_gpu_memory_used_bytes"), 0) << r;
  if (r.find("hvd_gpu_utilization_ratio") != std::string::npos) {
    const double u = metrics::SumSamples(r, "hvd_gpu_utilization_ratio");
    EXPECT_GE(u, 0);
    EXPECT_LE(u, 1);
  } else {
    std::cout << "no GPU utilisation sample (NVML did not answer)\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Gpus, NcclTest, ::testing::Values(1, 2));

}  // namespace
}  // namespace hvd::runtime
