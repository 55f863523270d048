#include "runtime/transport/hierarchical/hierarchical_backend.h"

#include <vector>

namespace hvd::runtime {
namespace {

class HierarchicalBackend final : public Backend, public HierarchicalKnob {
 public:
  HierarchicalBackend(const HierarchicalOptions& o,
                      std::unique_ptr<Backend> flat,
                      std::unique_ptr<Backend> local,
                      std::unique_ptr<Backend> cross)
      : o_(o),
        flat_(std::move(flat)),
        local_(std::move(local)),
        cross_(std::move(cross)) {}

  Status Allreduce(void* data, size_t count, DataType type,
                   ReduceOp op) override {
    if (!o_.allreduce) return flat_->Allreduce(data, count, type, op);
    if (count == 0) return Status::Ok();
    const size_t n = static_cast<size_t>(o_.local_size);
    const size_t esize = DataTypeSize(type);
    std::vector<size_t> counts(n), bytes(n);
    for (size_t l = 0; l < n; ++l) {
      counts[l] = count / n + (l < count % n ? 1 : 0);
      bytes[l] = counts[l] * esize;
    }
    share_.resize(counts[o_.local_rank] * esize);
    HVD_RETURN_IF_ERROR(
        local_->Reducescatter(data, share_.data(), counts, type, op));
    if (!share_.empty()) {
      HVD_RETURN_IF_ERROR(
          cross_->Allreduce(share_.data(), counts[o_.local_rank], type, op));
    }
    return local_->Allgatherv(share_.data(), data, bytes);
  }

  Status Allgatherv(const void* in, void* out,
                    const std::vector<size_t>& bytes) override {
    if (!o_.allgather) return flat_->Allgatherv(in, out, bytes);
    // Ranks are numbered host by host: host h holds ranks
    // [h * L, (h + 1) * L), and its cross rank is h.
    const size_t n = static_cast<size_t>(o_.local_size);
    const size_t hosts = bytes.size() / n;
    std::vector<size_t> host_bytes(hosts, 0);
    for (size_t r = 0; r < bytes.size(); ++r) host_bytes[r / n] += bytes[r];
    // This host's block, from its ranks' pieces.
    const size_t host = static_cast<size_t>(o_.cross_rank);
    std::vector<size_t> local_bytes(bytes.begin() + host * n,
                                    bytes.begin() + (host + 1) * n);
    block_.resize(host_bytes[host]);
    HVD_RETURN_IF_ERROR(local_->Allgatherv(in, block_.data(), local_bytes));
    return cross_->Allgatherv(block_.data(), out, host_bytes);
  }

  Status Broadcast(void* data, size_t bytes, int root) override {
    return flat_->Broadcast(data, bytes, root);
  }
  Status Alltoallv(const void* in, const std::vector<size_t>& send_bytes,
                   void* out, const std::vector<size_t>& recv_bytes) override {
    return flat_->Alltoallv(in, send_bytes, out, recv_bytes);
  }
  Status Reducescatter(const void* in, void* out,
                       const std::vector<size_t>& counts, DataType type,
                       ReduceOp op) override {
    return flat_->Reducescatter(in, out, counts, type, op);
  }
  Status Barrier() override { return flat_->Barrier(); }
  void SetHierarchical(bool allreduce, bool allgather) override {
    o_.allreduce = allreduce;
    o_.allgather = allgather;
  }

 private:
  HierarchicalOptions o_;
  std::unique_ptr<Backend> flat_, local_, cross_;
  std::vector<uint8_t> share_, block_;
};

}  // namespace

std::unique_ptr<Backend> MakeHierarchicalBackend(
    const HierarchicalOptions& options, std::unique_ptr<Backend> flat,
    std::unique_ptr<Backend> local, std::unique_ptr<Backend> cross) {
  return std::make_unique<HierarchicalBackend>(
      options, std::move(flat), std::move(local), std::move(cross));
}

}  // namespace hvd::runtime
