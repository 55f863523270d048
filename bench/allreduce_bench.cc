// allreduce_bench: run under `horovodrun -np N`. fp32 allreduce of sizes
// 4 B .. 256 MiB in powers of 4 (or the sizes given after the mode), and a
// fusion step (64 tensors of 16 KiB):
//   --mode engine   through libhvd's engine: each size as the blocking
//                   named allreduce (whose wait runs the cycle), the
//                   fusion step as 64 async ops fused
//   --mode shared   as engine, the tensors in memory from hvd::alloc_shared
//                   (reduced between the ranks' buffers directly)
//   --mode backend  the same sizes straight on the backend the job picked
//                   (shared memory on one host; Gloo's ring with
//                   HOROVOD_SHM_DISABLE=1), the fusion step as 64
//                   sequential calls
//   --mode broadcast  through the engine: each size as the blocking named
//                   broadcast from rank 0 (no fusion step)
//   --mode alltoall   through the engine: each size (what a rank sends in
//                   all) as the blocking named alltoall, an equal split to
//                   every rank (no fusion step)
//   --mode memcpy   no job: one core's memcpy of the same sizes (the
//                   physical reference), "RESULT memcpy <bytes> <s>"
// Rank 0 prints "RESULT <mode> <bytes> <seconds per op>" and
// "RESULT <mode> fusion <seconds per step>"; bench/run_allreduce.sh turns
// them into BENCH lines.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hvd/hvd.h"
#include "runtime/context.h"

namespace {

using Clock = std::chrono::steady_clock;

int Iterations(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>(
      (size_t{256} << 20) / std::max<size_t>(bytes, 1), 5, 2000));
}

// The median over 5 batches of the time per op: one batch disturbed by
// the rest of a 2-core machine does not move the figure.
template <typename Op>
double TimePerOp(int iters, Op&& op) {
  for (int i = 0; i < 3; ++i) op();  // warm-up
  const int batch = std::max(2, iters / 5);
  std::vector<double> per_op;
  for (int b = 0; b < 5; ++b) {
    auto start = Clock::now();
    for (int i = 0; i < batch; ++i) op();
    per_op.push_back(
        std::chrono::duration<double>(Clock::now() - start).count() / batch);
  }
  std::sort(per_op.begin(), per_op.end());
  return per_op[2];
}

int Fail(const hvd::Status& s) {
  std::fprintf(stderr, "allreduce_bench: %s\n", s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode =
      argc > 2 && std::string(argv[1]) == "--mode" ? argv[2] : "";
  const bool shared = mode == "shared";
  if (mode != "engine" && mode != "shared" && mode != "backend" &&
      mode != "memcpy" && mode != "broadcast" && mode != "alltoall") {
    std::fprintf(stderr,
                 "usage: allreduce_bench --mode "
                 "engine|shared|backend|broadcast|alltoall|memcpy "
                 "[BYTES...]\n");
    return 2;
  }
  constexpr size_t kMost = size_t{256} << 20;
  std::vector<size_t> sizes;
  for (size_t b = 4; b <= kMost; b *= 4) sizes.push_back(b);
  // Sizes after the mode replace the list.
  if (argc > 3) {
    sizes.clear();
    for (int i = 3; i < argc; ++i) {
      size_t bytes = std::strtoull(argv[i], nullptr, 10);
      if (bytes < 4 || bytes % 4 != 0 || bytes > kMost) {
        std::fprintf(stderr,
                     "allreduce_bench: size '%s' must be a multiple of 4 "
                     "bytes from 4 to 256 MiB\n",
                     argv[i]);
        return 2;
      }
      sizes.push_back(bytes);
    }
  }
  const size_t most = *std::max_element(sizes.begin(), sizes.end());
  std::vector<float> own(shared ? 0 : most / 4, 1.0f);
  float* data = own.data();
  if (shared) {
    hvd::StatusOr<void*> p = hvd::alloc_shared(most);
    if (!p.ok()) return Fail(p.status());
    data = static_cast<float*>(*p);
    std::fill(data, data + most / 4, 1.0f);
  }
  if (mode == "memcpy") {
    std::vector<float> to(most / 4, 0.0f);
    for (size_t bytes : sizes) {
      double t = TimePerOp(Iterations(bytes), [&] {
        std::memcpy(to.data(), data, bytes);
        // Keeps the copy from being optimised away.
        asm volatile("" : : "r"(to.data()) : "memory");
      });
      std::printf("RESULT memcpy %zu %.9f\n", bytes, t);
    }
    return 0;
  }
  constexpr int kTensors = 64;
  constexpr size_t kTensorFloats = (16 << 10) / 4;
  std::vector<std::vector<float>> grads(
      kTensors, std::vector<float>(kTensorFloats, 1.0f));
  hvd::Status failed;

  if (mode == "alltoall") {
    if (hvd::Status s = hvd::init(); !s.ok()) return Fail(s);
    const int n = hvd::size();
    for (size_t bytes : sizes) {
      // Rows of 4 bytes, as equal a split as the size allows.
      const int64_t rows = static_cast<int64_t>(bytes / 4);
      std::vector<int64_t> splits(n, rows / n);
      splits[0] += rows % n;
      const std::string name = "a2a." + std::to_string(bytes);
      const hvd::Tensor tensor{data, hvd::DataType::kFloat32, {rows}};
      hvd::Output out;
      double t = TimePerOp(Iterations(bytes), [&] {
        failed.Update(hvd::alltoall(name, tensor, splits, &out));
      });
      if (hvd::rank() == 0) std::printf("RESULT alltoall %zu %.9f\n", bytes, t);
    }
    (void)hvd::shutdown();
  } else if (mode == "broadcast") {
    if (hvd::Status s = hvd::init(); !s.ok()) return Fail(s);
    for (size_t bytes : sizes) {
      const std::string name = "bcast." + std::to_string(bytes);
      const hvd::Tensor tensor{
          data, hvd::DataType::kFloat32, {static_cast<int64_t>(bytes / 4)}};
      double t = TimePerOp(Iterations(bytes), [&] {
        failed.Update(hvd::broadcast(name, tensor, 0));
      });
      if (hvd::rank() == 0)
        std::printf("RESULT broadcast %zu %.9f\n", bytes, t);
    }
    (void)hvd::shutdown();
  } else if (mode == "engine" || mode == "shared") {
    if (hvd::Status s = hvd::init(); !s.ok()) return Fail(s);
    for (size_t bytes : sizes) {
      std::string name = "bench." + std::to_string(bytes);
      // The tensor's description is made once, as MPI's side passes the
      // same buffer each time: the loop times the collective alone.
      const hvd::Tensor tensor{
          data, hvd::DataType::kFloat32, {static_cast<int64_t>(bytes / 4)}};
      double t = TimePerOp(Iterations(bytes), [&] {
        failed.Update(hvd::allreduce(name, tensor, hvd::ReduceOp::kSum));
      });
      if (hvd::rank() == 0) {
        std::printf("RESULT %s %zu %.9f\n", mode.c_str(), bytes, t);
      }
    }
    double step = TimePerOp(50, [&] {
      std::vector<hvd::Handle> handles;
      for (int i = 0; i < kTensors; ++i) {
        handles.push_back(hvd::allreduce_async(
            "grad." + std::to_string(i), grads[i].data(), kTensorFloats,
            hvd::DataType::kFloat32, hvd::ReduceOp::kAverage));
      }
      for (auto& h : handles) failed.Update(h.wait());
    });
    if (hvd::rank() == 0) {
      std::printf("RESULT %s fusion %.9f\n", mode.c_str(), step);
    }
    (void)hvd::shutdown();
  } else {
    auto config =
        hvd::runtime::WorkerConfig::FromEnv(hvd::settings::ProcessEnv());
    if (!config.ok()) return Fail(config.status());
    auto ctx = hvd::runtime::Context::Create(*config);
    if (!ctx.ok()) return Fail(ctx.status());
    hvd::runtime::Backend& backend = (*ctx)->backend();
    const int rank = (*ctx)->assignment().rank;
    for (size_t bytes : sizes) {
      double t = TimePerOp(Iterations(bytes), [&] {
        failed.Update(backend.Allreduce(data, bytes / 4,
                                        hvd::runtime::DataType::kFloat32,
                                        hvd::runtime::ReduceOp::kSum));
      });
      if (rank == 0) std::printf("RESULT backend %zu %.9f\n", bytes, t);
    }
    double step = TimePerOp(50, [&] {
      for (int i = 0; i < kTensors; ++i) {
        failed.Update(backend.Allreduce(grads[i].data(), kTensorFloats,
                                        hvd::runtime::DataType::kFloat32,
                                        hvd::runtime::ReduceOp::kSum));
      }
    });
    if (rank == 0) std::printf("RESULT backend fusion %.9f\n", step);
    // The same step as the engine's data path alone: one call over the 64
    // tensors where they lie, averaged as the engine's step averages.
    std::vector<hvd::runtime::Piece> pieces;
    for (auto& g : grads) pieces.push_back({g.data(), kTensorFloats});
    const double average = 1.0 / (*ctx)->assignment().size;
    double whole = TimePerOp(50, [&] {
      failed.Update(
          backend.AllreducePieces(pieces, hvd::runtime::DataType::kFloat32,
                                  hvd::runtime::ReduceOp::kSum, average));
    });
    if (rank == 0) std::printf("RESULT backend pieces %.9f\n", whole);
  }
  if (shared) failed.Update(hvd::free_shared(data));
  std::fflush(stdout);
  return failed.ok() ? 0 : Fail(failed);
}
