// train_mnist without CUDA and cuDNN: the CPU only.
#include "mnist/model.h"

namespace hvd::mnist {

StatusOr<std::unique_ptr<Compute>> MakeCudnnCompute(int device, uint64_t) {
  return Status::FailedPrecondition(
      "GPU " + std::to_string(device),
      "this train_mnist was built without CUDA and cuDNN");
}

int VisibleGpus() { return 0; }

}  // namespace hvd::mnist
