#include "runtime/transport/nccl/nccl_backend.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/metrics.h"
#include "runtime/transport/nccl/gpu_usage.h"

namespace hvd::runtime {
namespace {

Status CudaError(const std::string& where, cudaError_t e) {
  return Status::Internal(where, std::string("CUDA: ") + cudaGetErrorString(e));
}

Status NcclError(const std::string& where, ncclResult_t r) {
  return Status::Unavailable(where,
                             std::string("NCCL: ") + ncclGetErrorString(r));
}

ncclDataType_t NcclType(DataType t) {
  switch (t) {
    case DataType::kUInt8:
      return ncclUint8;
    case DataType::kInt8:
      return ncclInt8;
    case DataType::kInt16:  // NCCL has none; the engine refuses it on CUDA
      return ncclInt8;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kBFloat16:
      return ncclBfloat16;
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
  }
  return ncclUint8;
}

ncclRedOp_t NcclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kProduct:
      return ncclProd;
  }
  return ncclSum;
}

// The communicators of a hierarchical allreduce: the host's GPUs, and the
// GPUs of the same local rank on every host.
struct Hierarchy {
  ncclComm_t local = nullptr, cross = nullptr;
  int local_rank = 0, local_size = 1;
};

// One stream with the communicators that run on it (NCCL runs the calls of
// one communicator in order, so streams only overlap with a communicator
// each), and the padded copy its hierarchical allreduces use.
struct Lane {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  Hierarchy hier;
  void* pad = nullptr;
  size_t pad_bytes = 0;
};

void Release(Lane& l) {
  if (l.pad) cudaFree(l.pad);
  if (l.hier.local) ncclCommDestroy(l.hier.local);
  if (l.hier.cross) ncclCommDestroy(l.hier.cross);
  if (l.comm) ncclCommDestroy(l.comm);
  if (l.stream) cudaStreamDestroy(l.stream);
  l = Lane();
}

// Device buffer `*buf` of at least `bytes` (its contents are lost).
// cudaFree waits for the device, so work still queued on the old buffer
// finishes first.
Status Grow(void** buf, size_t* have, size_t bytes) {
  if (bytes <= *have) return Status::Ok();
  if (*buf) cudaFree(*buf);
  *buf = nullptr;
  *have = 0;
  cudaError_t e = cudaMalloc(buf, bytes);
  if (e != cudaSuccess) return CudaError("nccl scratch", e);
  *have = bytes;
  return Status::Ok();
}

// The element-typed scalar NCCL's pre-multiplied sum takes.
template <typename T>
void Put(unsigned char* scalar, T value) {
  std::memcpy(scalar, &value, sizeof(value));
}

void Scalar(DataType type, double factor, unsigned char* scalar) {
  switch (type) {
    case DataType::kUInt8:
      return Put(scalar, static_cast<uint8_t>(factor));
    case DataType::kInt8:
      return Put(scalar, static_cast<int8_t>(factor));
    case DataType::kInt16:
      return Put(scalar, static_cast<int16_t>(factor));
    case DataType::kInt32:
      return Put(scalar, static_cast<int32_t>(factor));
    case DataType::kInt64:
      return Put(scalar, static_cast<int64_t>(factor));
    case DataType::kFloat16:
      return Put(scalar, FloatToHalf(static_cast<float>(factor)));
    case DataType::kBFloat16:
      return Put(scalar, FloatToBFloat16(static_cast<float>(factor)));
    case DataType::kFloat32:
      return Put(scalar, static_cast<float>(factor));
    case DataType::kFloat64:
      return Put(scalar, factor);
  }
}

// With one lane every call waits for its stream, as a Backend's calls do.
// With several (HOROVOD_NUM_NCCL_STREAMS), calls take the lanes in turn and
// return once queued; Flush waits for them all. Every rank makes the same
// calls in the same order, so the n-th call uses the same lane everywhere.
class NcclBackend final : public Backend {
 public:
  NcclBackend(std::vector<Lane> lanes, int rank, int size)
      : lanes_(std::move(lanes)), rank_(rank), size_(size) {}
  ~NcclBackend() override {
    (void)Flush();
    if (scratch_) cudaFree(scratch_);
    if (barrier_) cudaFree(barrier_);
    for (Lane& l : lanes_) Release(l);
  }

  bool Defers() const override { return lanes_.size() > 1; }

  Status Flush() override {
    for (Lane& l : lanes_) (void)Wait(l, "flush");
    return broken_;
  }

  Status Allreduce(void* data, size_t count, DataType type,
                   ReduceOp op) override {
    if (count == 0) return broken_;
    return Done(AllreduceOn(Next(), data, count, type, NcclOp(op)));
  }

  // NCCL scales on the device as it sums (a pre-multiplied sum), so device
  // memory never has to come to the host.
  Status ScaledSum(void* data, size_t count, DataType type,
                   double factor) override {
    if (count == 0) return broken_;
    alignas(8) unsigned char scalar[8] = {0};
    Scalar(type, factor, scalar);
    Lane& l = Next();
    // Hierarchical: the factor applies where each input first enters a sum
    // (the host's reduce-scatter), plain sums after that.
    ncclComm_t first = l.hier.local ? l.hier.local : l.comm;
    ncclRedOp_t op;
    ncclResult_t r = ncclRedOpCreatePreMulSum(&op, scalar, NcclType(type),
                                              ncclScalarHostImmediate, first);
    if (r != ncclSuccess) return Done({&l, "scaled allreduce", r});
    Call c = AllreduceOn(l, data, count, type, op);
    // NCCL allows it as soon as the calls given `op` have returned.
    ncclRedOpDestroy(op, first);
    return Done(c);
  }

  Status Allgatherv(const void* in, void* out,
                    const std::vector<size_t>& bytes) override {
    if (bytes.size() != static_cast<size_t>(size_)) {
      return Status::InvalidArgument("allgatherv", "needs one size per rank");
    }
    Lane& l = Next();
    // Uneven contributions: one broadcast per rank, in one NCCL group.
    ncclGroupStart();
    size_t off = 0;
    for (int r = 0; r < size_; ++r) {
      if (bytes[r]) {
        ncclBroadcast(in, static_cast<uint8_t*>(out) + off, bytes[r], ncclUint8,
                      r, l.comm, l.stream);
      }
      off += bytes[r];
    }
    return Done({&l, "allgatherv", ncclGroupEnd()});
  }

  Status Broadcast(void* data, size_t bytes, int root) override {
    if (root < 0 || root >= size_) {
      return Status::InvalidArgument("broadcast root",
                                     std::to_string(root) + " is not a rank");
    }
    if (bytes == 0) return broken_;
    Lane& l = Next();
    return Done(
        {&l, "broadcast",
         ncclBroadcast(data, data, bytes, ncclUint8, root, l.comm, l.stream)});
  }

  Status Alltoallv(const void* in, const std::vector<size_t>& send_bytes,
                   void* out, const std::vector<size_t>& recv_bytes) override {
    if (send_bytes.size() != static_cast<size_t>(size_) ||
        recv_bytes.size() != static_cast<size_t>(size_)) {
      return Status::InvalidArgument("alltoallv", "needs one size per rank");
    }
    Lane& l = Next();
    ncclGroupStart();
    size_t soff = 0, roff = 0;
    for (int r = 0; r < size_; ++r) {
      if (send_bytes[r]) {
        ncclSend(static_cast<const uint8_t*>(in) + soff, send_bytes[r],
                 ncclUint8, r, l.comm, l.stream);
      }
      if (recv_bytes[r]) {
        ncclRecv(static_cast<uint8_t*>(out) + roff, recv_bytes[r], ncclUint8, r,
                 l.comm, l.stream);
      }
      soff += send_bytes[r];
      roff += recv_bytes[r];
    }
    return Done({&l, "alltoallv", ncclGroupEnd()});
  }

  // Waits for itself: the scratch is shared by every lane.
  Status Reducescatter(const void* in, void* out,
                       const std::vector<size_t>& counts, DataType type,
                       ReduceOp op) override {
    if (counts.size() != static_cast<size_t>(size_)) {
      return Status::InvalidArgument("reducescatter",
                                     "needs one count per rank");
    }
    size_t total = 0, offset = 0;
    for (int r = 0; r < size_; ++r) {
      if (r < rank_) offset += counts[r];
      total += counts[r];
    }
    const size_t esize = DataTypeSize(type);
    Lane& l = Next();
    // Uneven blocks: allreduce into device scratch, keep this rank's block.
    HVD_RETURN_IF_ERROR(Grow(&scratch_, &scratch_bytes_, total * esize));
    cudaMemcpyAsync(scratch_, in, total * esize, cudaMemcpyDeviceToDevice,
                    l.stream);
    Call c = AllreduceOn(l, scratch_, total, type, NcclOp(op));
    if (c.result == ncclSuccess) {
      cudaMemcpyAsync(out, static_cast<uint8_t*>(scratch_) + offset * esize,
                      counts[rank_] * esize, cudaMemcpyDeviceToDevice,
                      l.stream);
    }
    HVD_RETURN_IF_ERROR(Done(c));
    return Wait(l, "reducescatter");
  }

  // Waits for every call before it and for itself.
  Status Barrier() override {
    HVD_RETURN_IF_ERROR(Flush());
    if (!barrier_) {
      cudaError_t e = cudaMalloc(&barrier_, sizeof(float));
      if (e != cudaSuccess) return CudaError("barrier", e);
    }
    Lane& l = Next();
    HVD_RETURN_IF_ERROR(
        Done(AllreduceOn(l, barrier_, 1, DataType::kFloat32, ncclSum)));
    return Wait(l, "barrier");
  }

 private:
  // A call queued on a lane, and what NCCL said when it was queued.
  struct Call {
    Lane* lane;
    const char* what;
    ncclResult_t result;
  };

  Lane& Next() { return lanes_[next_++ % lanes_.size()]; }

  Call AllreduceOn(Lane& l, void* data, size_t count, DataType type,
                   ncclRedOp_t op) {
    if (l.hier.local) return Hierarchical(l, data, count, type, op);
    return {
        &l, "allreduce",
        ncclAllReduce(data, data, count, NcclType(type), op, l.comm, l.stream)};
  }

  // Reduce-scatter on the host (with `first_op`, which may pre-multiply),
  // allreduce of this GPU's share across hosts, allgather on the host. The
  // shares are equal (NCCL's reduce-scatter needs that): a count that does
  // not divide goes through the lane's zero-padded copy.
  Call Hierarchical(Lane& l, void* data, size_t count, DataType type,
                    ncclRedOp_t first_op) {
    const char* what = "hierarchical allreduce";
    const size_t esize = DataTypeSize(type);
    const size_t n = static_cast<size_t>(l.hier.local_size);
    const size_t share = (count + n - 1) / n;
    uint8_t* buf = static_cast<uint8_t*>(data);
    if (share * n != count) {
      Status grown = Grow(&l.pad, &l.pad_bytes, share * n * esize);
      if (!grown.ok()) {
        if (broken_.ok()) broken_ = grown;  // Done returns it
        return {&l, what, ncclSystemError};
      }
      buf = static_cast<uint8_t*>(l.pad);
      cudaMemsetAsync(buf + count * esize, 0, (share * n - count) * esize,
                      l.stream);
      cudaMemcpyAsync(buf, data, count * esize, cudaMemcpyDeviceToDevice,
                      l.stream);
    }
    uint8_t* mine =
        buf + static_cast<size_t>(l.hier.local_rank) * share * esize;
    const ncclDataType_t t = NcclType(type);
    // Sum across hosts for the sums (pre-multiplied or not); the other ops
    // are their own.
    const ncclRedOp_t cross_op =
        first_op == ncclMin || first_op == ncclMax || first_op == ncclProd
            ? first_op
            : ncclSum;
    // The lane's stream orders the three and the copy back.
    ncclResult_t r = ncclReduceScatter(buf, mine, share, t, first_op,
                                       l.hier.local, l.stream);
    if (r == ncclSuccess) {
      r = ncclAllReduce(mine, mine, share, t, cross_op, l.hier.cross, l.stream);
    }
    if (r == ncclSuccess) {
      r = ncclAllGather(mine, buf, share, t, l.hier.local, l.stream);
    }
    if (r == ncclSuccess && buf != data) {
      cudaMemcpyAsync(data, buf, count * esize, cudaMemcpyDeviceToDevice,
                      l.stream);
    }
    return {&l, what, r};
  }

  // After queueing: the first error stays; with one lane, waits for it.
  Status Done(const Call& c) {
    if (!broken_.ok()) return broken_;
    if (c.result != ncclSuccess) {
      broken_ = NcclError("rank " + std::to_string(rank_) + ": nccl " + c.what,
                          c.result);
      return broken_;
    }
    if (lanes_.size() == 1) return Wait(*c.lane, c.what);
    return Status::Ok();
  }

  Status Wait(Lane& l, const char* what) {
    cudaError_t e = cudaStreamSynchronize(l.stream);
    if (e != cudaSuccess && broken_.ok()) {
      broken_ =
          CudaError("rank " + std::to_string(rank_) + ": nccl " + what, e);
    }
    return broken_;
  }

  std::vector<Lane> lanes_;
  size_t next_ = 0;
  int rank_, size_;
  Status broken_;
  void* scratch_ = nullptr;  // Reducescatter's
  size_t scratch_bytes_ = 0;
  void* barrier_ = nullptr;
};

}  // namespace

int CudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

int NcclVersionCode() { return NCCL_VERSION_CODE; }

StatusOr<std::unique_ptr<Backend>> CreateNcclBackend(const NcclOptions& o,
                                                     Store& store) {
  const std::string where = "rank " + std::to_string(o.rank) + ": nccl";
  if (CudaDeviceCount() <= o.device) {
    return Status::FailedPrecondition(
        where, "GPU " + std::to_string(o.device) + " is not visible (" +
                   std::to_string(CudaDeviceCount()) + " devices)");
  }
  cudaError_t e = cudaSetDevice(o.device);
  if (e != cudaSuccess) return CudaError(where, e);
  ncclUniqueId id;
  if (o.rank == 0) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) return NcclError(where, r);
    HVD_RETURN_IF_ERROR(store.Set(
        "nccl/id", std::string(reinterpret_cast<char*>(&id), sizeof(id))));
  } else {
    HVD_ASSIGN_OR_RETURN(auto values,
                         store.Wait({"nccl/id"}, std::chrono::seconds(60)));
    if (values[0].size() != sizeof(id)) {
      return Status::DataLoss(where,
                              "the published ncclUniqueId has the wrong size");
    }
    std::memcpy(&id, values[0].data(), sizeof(id));
  }
  std::vector<Lane> lanes(static_cast<size_t>(std::max(o.streams, 1)));
  auto fail = [&](const std::string& what, ncclResult_t r) {
    for (Lane& l : lanes) Release(l);
    return NcclError(where + what, r);
  };
  ncclResult_t r = ncclCommInitRank(&lanes[0].comm, o.size, id, o.rank);
  if (r != ncclSuccess) return fail("", r);
  // The other lanes' communicators: copies of the first (same ranks), made
  // by every rank in the same order.
  for (size_t i = 1; i < lanes.size(); ++i) {
    r = ncclCommSplit(lanes[0].comm, 0, o.rank, &lanes[i].comm, nullptr);
    if (r != ncclSuccess) return fail(" (stream communicators)", r);
  }
  const bool hierarchical =
      o.hierarchical_allreduce && o.local_size > 1 && o.local_size < o.size;
  for (Lane& l : lanes) {
    if (hierarchical) {
      // Collective over the lane's communicator: every rank splits twice.
      r = ncclCommSplit(l.comm, o.cross_rank, o.local_rank, &l.hier.local,
                        nullptr);
      if (r == ncclSuccess) {
        r = ncclCommSplit(l.comm, o.local_rank, o.cross_rank, &l.hier.cross,
                          nullptr);
      }
      if (r != ncclSuccess) return fail(" (hierarchical communicators)", r);
      l.hier.local_rank = o.local_rank;
      l.hier.local_size = o.local_size;
    }
    e = cudaStreamCreateWithFlags(&l.stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
      for (Lane& m : lanes) Release(m);
      return CudaError(where, e);
    }
  }
  Metrics::Process().SetGpuReader(MakeGpuReader(o.device));
  return std::unique_ptr<Backend>(
      new NcclBackend(std::move(lanes), o.rank, o.size));
}

DeviceBackendFactory MakeDeviceBackendFactory(const NcclOptions& options,
                                              std::shared_ptr<Store> store) {
  return [options, store](int device) {
    NcclOptions o = options;
    o.device = device;
    return CreateNcclBackend(o, *store);
  };
}

}  // namespace hvd::runtime
