#include "runtime/transport/nccl/nccl_backend.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <string>
#include <vector>

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

class NcclBackend final : public Backend {
 public:
  NcclBackend(ncclComm_t comm, cudaStream_t stream, int rank, int size,
              Hierarchy hier)
      : comm_(comm), stream_(stream), rank_(rank), size_(size), hier_(hier) {}
  ~NcclBackend() override {
    if (scratch_) cudaFree(scratch_);
    if (pad_) cudaFree(pad_);
    if (barrier_) cudaFree(barrier_);
    if (hier_.local) ncclCommDestroy(hier_.local);
    if (hier_.cross) ncclCommDestroy(hier_.cross);
    ncclCommDestroy(comm_);
    cudaStreamDestroy(stream_);
  }

  Status Allreduce(void* data, size_t count, DataType type,
                   ReduceOp op) override {
    if (count == 0) return Status::Ok();
    if (hier_.local) return Hierarchical(data, count, type, NcclOp(op));
    return Run("allreduce", ncclAllReduce(data, data, count, NcclType(type),
                                          NcclOp(op), comm_, stream_));
  }

  // NCCL scales on the device as it sums (a pre-multiplied sum), so device
  // memory never has to come to the host.
  Status ScaledSum(void* data, size_t count, DataType type,
                   double factor) override {
    if (count == 0) return Status::Ok();
    // The scalar has the element type.
    alignas(8) unsigned char scalar[8] = {0};
    switch (type) {
      case DataType::kUInt8: {
        uint8_t v = static_cast<uint8_t>(factor);
        std::memcpy(scalar, &v, sizeof(v));
        break;
      }
      case DataType::kInt8: {
        int8_t v = static_cast<int8_t>(factor);
        std::memcpy(scalar, &v, sizeof(v));
        break;
      }
      case DataType::kInt32: {
        int32_t v = static_cast<int32_t>(factor);
        std::memcpy(scalar, &v, sizeof(v));
        break;
      }
      case DataType::kInt64: {
        int64_t v = static_cast<int64_t>(factor);
        std::memcpy(scalar, &v, sizeof(v));
        break;
      }
      case DataType::kFloat16: {
        uint16_t v = FloatToHalf(static_cast<float>(factor));
        std::memcpy(scalar, &v, sizeof(v));
        break;
      }
      case DataType::kBFloat16: {
        uint16_t v = FloatToBFloat16(static_cast<float>(factor));
        std::memcpy(scalar, &v, sizeof(v));
        break;
      }
      case DataType::kFloat32: {
        float v = static_cast<float>(factor);
        std::memcpy(scalar, &v, sizeof(v));
        break;
      }
      case DataType::kFloat64:
        std::memcpy(scalar, &factor, sizeof(factor));
        break;
    }
    // Hierarchical: the factor applies where each input first enters a sum
    // (the host's reduce-scatter), plain sums after that.
    ncclComm_t first = hier_.local ? hier_.local : comm_;
    ncclRedOp_t op;
    ncclResult_t r = ncclRedOpCreatePreMulSum(&op, scalar, NcclType(type),
                                              ncclScalarHostImmediate, first);
    if (r != ncclSuccess) return Run("scaled allreduce", r);
    Status s = hier_.local
                   ? Hierarchical(data, count, type, op)
                   : Run("scaled allreduce",
                         ncclAllReduce(data, data, count, NcclType(type), op,
                                       comm_, stream_));
    ncclRedOpDestroy(op, first);
    return s;
  }

  Status Allgatherv(const void* in, void* out,
                    const std::vector<size_t>& bytes) override {
    if (bytes.size() != static_cast<size_t>(size_)) {
      return Status::InvalidArgument("allgatherv", "needs one size per rank");
    }
    // Uneven contributions: one broadcast per rank, in one NCCL group.
    ncclGroupStart();
    size_t off = 0;
    for (int r = 0; r < size_; ++r) {
      if (bytes[r]) {
        ncclBroadcast(in, static_cast<uint8_t*>(out) + off, bytes[r], ncclUint8,
                      r, comm_, stream_);
      }
      off += bytes[r];
    }
    return Run("allgatherv", ncclGroupEnd());
  }

  Status Broadcast(void* data, size_t bytes, int root) override {
    if (root < 0 || root >= size_) {
      return Status::InvalidArgument("broadcast root",
                                     std::to_string(root) + " is not a rank");
    }
    if (bytes == 0) return Status::Ok();
    return Run("broadcast", ncclBroadcast(data, data, bytes, ncclUint8, root,
                                          comm_, stream_));
  }

  Status Alltoallv(const void* in, const std::vector<size_t>& send_bytes,
                   void* out, const std::vector<size_t>& recv_bytes) override {
    if (send_bytes.size() != static_cast<size_t>(size_) ||
        recv_bytes.size() != static_cast<size_t>(size_)) {
      return Status::InvalidArgument("alltoallv", "needs one size per rank");
    }
    ncclGroupStart();
    size_t soff = 0, roff = 0;
    for (int r = 0; r < size_; ++r) {
      if (send_bytes[r]) {
        ncclSend(static_cast<const uint8_t*>(in) + soff, send_bytes[r],
                 ncclUint8, r, comm_, stream_);
      }
      if (recv_bytes[r]) {
        ncclRecv(static_cast<uint8_t*>(out) + roff, recv_bytes[r], ncclUint8, r,
                 comm_, stream_);
      }
      soff += send_bytes[r];
      roff += recv_bytes[r];
    }
    return Run("alltoallv", ncclGroupEnd());
  }

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
    // Uneven blocks: allreduce into device scratch, keep this rank's block.
    HVD_RETURN_IF_ERROR(Grow(&scratch_, &scratch_bytes_, total * esize));
    cudaMemcpyAsync(scratch_, in, total * esize, cudaMemcpyDeviceToDevice,
                    stream_);
    HVD_RETURN_IF_ERROR(Allreduce(scratch_, total, type, op));
    cudaError_t e =
        cudaMemcpy(out, static_cast<uint8_t*>(scratch_) + offset * esize,
                   counts[rank_] * esize, cudaMemcpyDeviceToDevice);
    return e == cudaSuccess ? Status::Ok() : CudaError("reducescatter", e);
  }

  Status Barrier() override {
    if (!barrier_) {
      cudaError_t e = cudaMalloc(&barrier_, sizeof(float));
      if (e != cudaSuccess) return CudaError("barrier", e);
    }
    return Allreduce(barrier_, 1, DataType::kFloat32, ReduceOp::kSum);
  }

 private:
  // Reduce-scatter on the host (with `first_op`, which may pre-multiply),
  // allreduce of this GPU's share across hosts, allgather on the host. The
  // shares are equal (NCCL's reduce-scatter needs that): a count that does
  // not divide goes through zero-padded scratch.
  Status Hierarchical(void* data, size_t count, DataType type,
                      ncclRedOp_t first_op) {
    const size_t esize = DataTypeSize(type);
    const size_t n = static_cast<size_t>(hier_.local_size);
    const size_t share = (count + n - 1) / n;
    uint8_t* buf = static_cast<uint8_t*>(data);
    if (share * n != count) {
      // Its own buffer: `data` may be scratch_ (Reducescatter's).
      HVD_RETURN_IF_ERROR(Grow(&pad_, &pad_bytes_, share * n * esize));
      buf = static_cast<uint8_t*>(pad_);
      cudaMemsetAsync(buf + count * esize, 0, (share * n - count) * esize,
                      stream_);
      cudaMemcpyAsync(buf, data, count * esize, cudaMemcpyDeviceToDevice,
                      stream_);
    }
    uint8_t* mine = buf + static_cast<size_t>(hier_.local_rank) * share * esize;
    const ncclDataType_t t = NcclType(type);
    // Sum across hosts for the sums (pre-multiplied or not); the other ops
    // are their own.
    const ncclRedOp_t cross_op =
        first_op == ncclMin || first_op == ncclMax || first_op == ncclProd
            ? first_op
            : ncclSum;
    // One stream orders the three; Run waits for the last.
    ncclResult_t r =
        ncclReduceScatter(buf, mine, share, t, first_op, hier_.local, stream_);
    if (r == ncclSuccess) {
      r = ncclAllReduce(mine, mine, share, t, cross_op, hier_.cross, stream_);
    }
    if (r == ncclSuccess) {
      r = ncclAllGather(mine, buf, share, t, hier_.local, stream_);
    }
    HVD_RETURN_IF_ERROR(Run("hierarchical allreduce", r));
    if (buf != data) {
      cudaError_t e =
          cudaMemcpy(data, buf, count * esize, cudaMemcpyDeviceToDevice);
      if (e != cudaSuccess) return CudaError("hierarchical allreduce", e);
    }
    return Status::Ok();
  }

  // Device buffer `*buf` of at least `bytes` (its contents are lost).
  static Status Grow(void** buf, size_t* have, size_t bytes) {
    if (bytes <= *have) return Status::Ok();
    if (*buf) cudaFree(*buf);
    *buf = nullptr;
    *have = 0;
    cudaError_t e = cudaMalloc(buf, bytes);
    if (e != cudaSuccess) return CudaError("nccl scratch", e);
    *have = bytes;
    return Status::Ok();
  }

  Status Run(const char* what, ncclResult_t r) {
    if (!broken_.ok()) return broken_;
    if (r != ncclSuccess) {
      broken_ =
          NcclError("rank " + std::to_string(rank_) + ": nccl " + what, r);
      return broken_;
    }
    cudaError_t e = cudaStreamSynchronize(stream_);
    if (e != cudaSuccess) {
      broken_ =
          CudaError("rank " + std::to_string(rank_) + ": nccl " + what, e);
    }
    return broken_;
  }

  ncclComm_t comm_;
  cudaStream_t stream_;
  int rank_, size_;
  Hierarchy hier_;
  Status broken_;
  void* scratch_ = nullptr;  // Reducescatter's
  size_t scratch_bytes_ = 0;
  void* pad_ = nullptr;  // the hierarchical allreduce's padded copy
  size_t pad_bytes_ = 0;
  void* barrier_ = nullptr;
};

}  // namespace

int CudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

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
  ncclComm_t comm;
  ncclResult_t r = ncclCommInitRank(&comm, o.size, id, o.rank);
  if (r != ncclSuccess) return NcclError(where, r);
  Hierarchy hier;
  if (o.hierarchical_allreduce && o.local_size > 1 && o.local_size < o.size) {
    // Collective over the job's communicator: every rank splits twice.
    r = ncclCommSplit(comm, o.cross_rank, o.local_rank, &hier.local, nullptr);
    if (r == ncclSuccess) {
      r = ncclCommSplit(comm, o.local_rank, o.cross_rank, &hier.cross, nullptr);
    }
    if (r != ncclSuccess) {
      if (hier.local) ncclCommDestroy(hier.local);
      ncclCommDestroy(comm);
      return NcclError(where + " (hierarchical communicators)", r);
    }
    hier.local_rank = o.local_rank;
    hier.local_size = o.local_size;
  }
  cudaStream_t stream;
  e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    if (hier.local) ncclCommDestroy(hier.local);
    if (hier.cross) ncclCommDestroy(hier.cross);
    ncclCommDestroy(comm);
    return CudaError(where, e);
  }
  return std::unique_ptr<Backend>(
      new NcclBackend(comm, stream, o.rank, o.size, hier));
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
