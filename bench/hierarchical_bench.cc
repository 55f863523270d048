// hierarchical_bench: the hierarchical allreduce against the flat ring on
// one machine. A job of two named hosts of two ranks each, the ranks
// threads of this process with a context each over a real rendezvous: a
// host's ranks share memory, the hosts talk Gloo over loopback TCP (as two
// machines would, less the wire). fp32 allreduce on the host backend, for
// each size (default 64 KiB to 64 MiB in powers of 4):
//   RESULT hier <bytes> <seconds per op>   hierarchical (the default here)
//   RESULT flat <bytes> <seconds per op>   --no-hierarchical-allreduce
// bench/run_hierarchical.sh turns them into BENCH lines.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous/server.h"
#include "runtime/context.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kHosts = 2, kPerHost = 2;

// Seconds per op: the median of 5 batches (warm-up first).
template <typename Op>
double TimePerOp(int iters, Op&& op) {
  for (int i = 0; i < 2; ++i) op();
  const int batch = std::max(1, iters / 5);
  std::vector<double> per_op;
  for (int b = 0; b < 5; ++b) {
    const auto start = Clock::now();
    for (int i = 0; i < batch; ++i) op();
    per_op.push_back(
        std::chrono::duration<double>(Clock::now() - start).count() / batch);
  }
  std::sort(per_op.begin(), per_op.end());
  return per_op[2];
}

// One job of kHosts x kPerHost ranks; every rank allreduces each size.
// False when the job could not start.
bool Run(bool hierarchical, const std::vector<size_t>& sizes) {
  hvd::rendezvous::ServerOptions options;
  options.admin_token = "bench";
  auto server = hvd::rendezvous::RendezvousServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "hierarchical_bench: %s\n",
                 server.status().ToString().c_str());
    return false;
  }
  std::vector<hvd::rendezvous::HostSlots> hosts;
  for (int h = 0; h < kHosts; ++h) {
    hosts.push_back({"host" + std::to_string(h), kPerHost, 0});
  }
  auto job = (*server)->table().CreateJob(hosts, kHosts * kPerHost, false);
  if (!job.ok()) {
    std::fprintf(stderr, "hierarchical_bench: %s\n",
                 job.status().ToString().c_str());
    return false;
  }
  std::vector<std::thread> ranks;
  std::vector<int> failed(kHosts * kPerHost, 0);
  for (int r = 0; r < kHosts * kPerHost; ++r) {
    ranks.emplace_back([&, r] {
      hvd::runtime::WorkerConfig c;
      c.launched = true;
      c.rendezvous_addr = (*server)->address();
      c.job_id = job->job_id;
      c.job_token = job->token;
      c.host = hosts[r / kPerHost].host;
      c.slot = r % kPerHost;
      c.hierarchical_allreduce = hierarchical;
      auto ctx = hvd::runtime::Context::Create(c);
      if (!ctx.ok()) {
        std::fprintf(stderr, "hierarchical_bench: rank %d: %s\n", r,
                     ctx.status().ToString().c_str());
        failed[r] = 1;
        return;
      }
      hvd::runtime::Backend& backend = (*ctx)->backend();
      for (size_t bytes : sizes) {
        std::vector<float> data(bytes / 4, 1.0f);
        const int iters = static_cast<int>(
            std::clamp<size_t>((size_t{128} << 20) / bytes, 5, 500));
        const double t = TimePerOp(iters, [&] {
          if (!backend
                   .Allreduce(data.data(), data.size(),
                              hvd::runtime::DataType::kFloat32,
                              hvd::runtime::ReduceOp::kSum)
                   .ok()) {
            failed[r] = 1;
          }
        });
        if (r == 0) {
          std::printf("RESULT %s %zu %.9f\n", hierarchical ? "hier" : "flat",
                      bytes, t);
          std::fflush(stdout);
        }
      }
    });
  }
  for (auto& t : ranks) t.join();
  return std::none_of(failed.begin(), failed.end(), [](int f) { return f; });
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i) {
    const size_t bytes = std::strtoull(argv[i], nullptr, 10);
    if (bytes < 4 || bytes % 4 != 0 || bytes > (size_t{256} << 20)) {
      std::fprintf(stderr,
                   "hierarchical_bench: size '%s' must be a multiple of 4 "
                   "bytes from 4 to 256 MiB\n",
                   argv[i]);
      return 2;
    }
    sizes.push_back(bytes);
  }
  if (sizes.empty()) {
    for (size_t b = 64 << 10; b <= (size_t{64} << 20); b *= 4) {
      sizes.push_back(b);
    }
  }
  return Run(true, sizes) && Run(false, sizes) ? 0 : 1;
}
