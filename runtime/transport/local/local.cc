#include "runtime/transport/local/local.h"

#include <poll.h>

#include <cstring>
#include <string>
#include <vector>

#include "runtime/wake_fd.h"

namespace hvd::runtime {
namespace {

// The backend of a job of one: every collective is a local copy.
class SingleProcessBackend final : public Backend {
 public:
  Status Allreduce(void*, size_t, DataType, ReduceOp) override {
    return Status::Ok();
  }
  Status Allgatherv(const void* in, void* out,
                    const std::vector<size_t>& bytes) override {
    if (bytes.size() != 1) {
      return Status::InvalidArgument("allgatherv", "needs one size per rank");
    }
    if (bytes[0]) std::memmove(out, in, bytes[0]);
    return Status::Ok();
  }
  Status Broadcast(void*, size_t, int root) override {
    if (root != 0) {
      return Status::InvalidArgument(
          "broadcast root",
          std::to_string(root) + " is not a rank of a job of 1");
    }
    return Status::Ok();
  }
  Status Alltoallv(const void* in, const std::vector<size_t>& send_bytes,
                   void* out, const std::vector<size_t>& recv_bytes) override {
    if (send_bytes.size() != 1 || recv_bytes.size() != 1 ||
        send_bytes[0] != recv_bytes[0]) {
      return Status::InvalidArgument("alltoallv",
                                     "needs matching sizes for the one rank");
    }
    if (send_bytes[0]) std::memmove(out, in, send_bytes[0]);
    return Status::Ok();
  }
  Status Reducescatter(const void* in, void* out,
                       const std::vector<size_t>& counts, DataType type,
                       ReduceOp) override {
    if (counts.size() != 1) {
      return Status::InvalidArgument("reducescatter",
                                     "needs one count per rank");
    }
    if (counts[0]) std::memmove(out, in, counts[0] * DataTypeSize(type));
    return Status::Ok();
  }
  Status Barrier() override { return Status::Ok(); }
};

class LocalControlPlane final : public ControlPlane {
 public:
  Status Exchange(const std::string& mine, std::vector<std::string>* all,
                  bool) override {
    all->assign(1, mine);
    return Status::Ok();
  }
  void Wait(std::chrono::milliseconds timeout, bool* peer) override {
    *peer = false;
    pollfd p{wake_.fd(), POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(timeout.count()));
    wake_.Drain();
  }
  void Notify() override { wake_.Notify(); }
  // Alone, a rank has no peer to wait for.
  bool Drivable() const override { return true; }

 private:
  WakeFd wake_;
};

}  // namespace

std::unique_ptr<Backend> CreateLocalBackend() {
  return std::make_unique<SingleProcessBackend>();
}

std::unique_ptr<ControlPlane> CreateLocalControlPlane() {
  return std::make_unique<LocalControlPlane>();
}

}  // namespace hvd::runtime
