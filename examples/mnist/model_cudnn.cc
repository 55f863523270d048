// The model on a GPU: convolutions, bias, ReLU, pooling and dropout on
// cuDNN, the dense layers on cuBLAS (column-major: our row-major {out, in}
// weights are cuBLAS's in x out matrices). No kernels of our own: softmax
// and the loss stay on the host (n x 10 values), parameters and gradients
// cross PCIe once per step (a few MB), which also keeps the gradient
// exchange and the optimizer identical to the CPU path.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstring>

#include "mnist/model.h"

namespace hvd::mnist {
namespace {

#define HVD_CUDA(call)                                               \
  do {                                                               \
    cudaError_t e_ = (call);                                         \
    if (e_ != cudaSuccess)                                           \
      return Status::Internal(                                       \
          "CUDA", std::string(#call ": ") + cudaGetErrorString(e_)); \
  } while (0)
#define HVD_CUDNN(call)                                                \
  do {                                                                 \
    cudnnStatus_t e_ = (call);                                         \
    if (e_ != CUDNN_STATUS_SUCCESS)                                    \
      return Status::Internal(                                         \
          "cuDNN", std::string(#call ": ") + cudnnGetErrorString(e_)); \
  } while (0)
#define HVD_CUBLAS(call)                                                  \
  do {                                                                    \
    cublasStatus_t e_ = (call);                                           \
    if (e_ != CUBLAS_STATUS_SUCCESS)                                      \
      return Status::Internal(                                            \
          "cuBLAS", std::string(#call ": status ") + std::to_string(e_)); \
  } while (0)

// A device buffer of floats.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  Status Resize(size_t bytes) {
    if (bytes <= bytes_) return Status::Ok();
    if (p_) cudaFree(p_);
    p_ = nullptr;
    bytes_ = 0;
    HVD_CUDA(cudaMalloc(&p_, bytes));
    bytes_ = bytes;
    return Status::Ok();
  }
  float* f() const { return static_cast<float*>(p_); }
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

struct Tensor4 {
  cudnnTensorDescriptor_t d = nullptr;
  ~Tensor4() {
    if (d) cudnnDestroyTensorDescriptor(d);
  }
  Status Set(int n, int c, int h, int w) {
    if (!d) HVD_CUDNN(cudnnCreateTensorDescriptor(&d));
    HVD_CUDNN(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                         n, c, h, w));
    return Status::Ok();
  }
};

// One convolution layer's descriptors and algorithms for a batch size.
struct Conv {
  cudnnFilterDescriptor_t filter = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t fwd{};
  cudnnConvolutionBwdDataAlgo_t bwd_data{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter{};
  size_t workspace = 0;
  ~Conv() {
    if (filter) cudnnDestroyFilterDescriptor(filter);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
  }
  Status Set(cudnnHandle_t h, const Tensor4& x, const Tensor4& y, int k, int c,
             bool need_data) {
    HVD_CUDNN(cudnnCreateFilterDescriptor(&filter));
    HVD_CUDNN(cudnnSetFilter4dDescriptor(filter, CUDNN_DATA_FLOAT,
                                         CUDNN_TENSOR_NCHW, k, c, 3, 3));
    HVD_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
    HVD_CUDNN(cudnnSetConvolution2dDescriptor(
        conv, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    // Plain float32 arithmetic, as on the CPU path: the default math type
    // lets Ampere and later GPUs round the operands to TF32 (10-bit
    // mantissas), and the GPU's gradients are checked against oneDNN's.
    HVD_CUDNN(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH));
    int found = 0;
    cudnnConvolutionFwdAlgoPerf_t f;
    HVD_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(h, x.d, filter, conv, y.d,
                                                     1, &found, &f));
    fwd = f.algo;
    cudnnConvolutionBwdFilterAlgoPerf_t bf;
    HVD_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        h, x.d, y.d, conv, filter, 1, &found, &bf));
    bwd_filter = bf.algo;
    size_t s = 0;
    HVD_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(h, x.d, filter, conv, y.d,
                                                      fwd, &s));
    workspace = std::max(workspace, s);
    HVD_CUDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        h, x.d, y.d, conv, filter, bwd_filter, &s));
    workspace = std::max(workspace, s);
    if (need_data) {
      cudnnConvolutionBwdDataAlgoPerf_t bd;
      HVD_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          h, filter, y.d, conv, x.d, 1, &found, &bd));
      bwd_data = bd.algo;
      HVD_CUDNN(cudnnGetConvolutionBackwardDataWorkspaceSize(
          h, filter, y.d, conv, x.d, bwd_data, &s));
      workspace = std::max(workspace, s);
    }
    return Status::Ok();
  }
};

struct Dropout {
  cudnnDropoutDescriptor_t d = nullptr;
  DeviceBuffer states, reserve;
  ~Dropout() {
    if (d) cudnnDestroyDropoutDescriptor(d);
  }
  Status Set(cudnnHandle_t h, float rate, uint64_t seed, const Tensor4& x) {
    size_t bytes = 0;
    HVD_CUDNN(cudnnCreateDropoutDescriptor(&d));
    HVD_CUDNN(cudnnDropoutGetStatesSize(h, &bytes));
    HVD_RETURN_IF_ERROR(states.Resize(bytes));
    HVD_CUDNN(cudnnSetDropoutDescriptor(d, h, rate, states.get(), bytes, seed));
    HVD_CUDNN(cudnnDropoutGetReserveSpaceSize(x.d, &bytes));
    return reserve.Resize(bytes);
  }
};

// Everything for one batch size.
struct Net {
  int n = 0;
  Tensor4 x, y1, y2, p, h, z, b1, b2, b3, b4;
  Conv c1, c2;
  cudnnPoolingDescriptor_t pool = nullptr;
  cudnnActivationDescriptor_t relu = nullptr;
  Dropout drop1, drop2;
  DeviceBuffer dx, dy1, dy2, dp, dd1, dh, dd2, dz, dlogits;
  DeviceBuffer ay1, ay2, ap, ad1, ah, ad2, az, workspace, ones;
  ~Net() {
    if (pool) cudnnDestroyPoolingDescriptor(pool);
    if (relu) cudnnDestroyActivationDescriptor(relu);
  }
};

class CudnnCompute final : public Compute {
 public:
  CudnnCompute(int device, uint64_t seed) : device_(device), seed_(seed) {}
  ~CudnnCompute() override {
    nets_.clear();
    if (blas_) cublasDestroy(blas_);
    if (dnn_) cudnnDestroy(dnn_);
  }

  Status Init() {
    HVD_CUDA(cudaSetDevice(device_));
    HVD_CUDNN(cudnnCreate(&dnn_));
    HVD_CUBLAS(cublasCreate(&blas_));
    for (int k = 0; k < 8; ++k) {
      static const size_t kSizes[8] = {32 * 9,     32,  64 * 32 * 9, 64,
                                       128 * 9216, 128, 10 * 128,    10};
      HVD_RETURN_IF_ERROR(w_[k].Resize(kSizes[k] * 4));
      HVD_RETURN_IF_ERROR(g_[k].Resize(kSizes[k] * 4));
    }
    return Status::Ok();
  }

  std::string Describe() const override {
    return "cuDNN and cuBLAS on GPU " + std::to_string(device_);
  }

  Status Forward(const std::vector<Param>& params, const float* images, int n,
                 bool training, bool dropout, float* logits) override {
    HVD_CUDA(cudaSetDevice(device_));
    HVD_ASSIGN_OR_RETURN(Net * t, NetFor(n));
    for (int k = 0; k < 8; ++k) {
      HVD_CUDA(cudaMemcpy(w_[k].get(), params[k].value.data(),
                          params[k].value.size() * 4, cudaMemcpyHostToDevice));
    }
    HVD_CUDA(cudaMemcpy(t->dx.get(), images, static_cast<size_t>(n) * 784 * 4,
                        cudaMemcpyHostToDevice));
    const float one = 1, zero = 0;
    // conv1 + bias + ReLU (in place).
    HVD_CUDNN(cudnnConvolutionForward(
        dnn_, &one, t->x.d, t->dx.get(), t->c1.filter, w_[kConv1W].get(),
        t->c1.conv, t->c1.fwd, t->workspace.get(), t->workspace.bytes(), &zero,
        t->y1.d, t->ay1.get()));
    HVD_CUDNN(cudnnAddTensor(dnn_, &one, t->b1.d, w_[kConv1B].get(), &one,
                             t->y1.d, t->ay1.get()));
    HVD_CUDNN(cudnnActivationForward(dnn_, t->relu, &one, t->y1.d, t->ay1.get(),
                                     &zero, t->y1.d, t->ay1.get()));
    // conv2 + bias + ReLU.
    HVD_CUDNN(cudnnConvolutionForward(
        dnn_, &one, t->y1.d, t->ay1.get(), t->c2.filter, w_[kConv2W].get(),
        t->c2.conv, t->c2.fwd, t->workspace.get(), t->workspace.bytes(), &zero,
        t->y2.d, t->ay2.get()));
    HVD_CUDNN(cudnnAddTensor(dnn_, &one, t->b2.d, w_[kConv2B].get(), &one,
                             t->y2.d, t->ay2.get()));
    HVD_CUDNN(cudnnActivationForward(dnn_, t->relu, &one, t->y2.d, t->ay2.get(),
                                     &zero, t->y2.d, t->ay2.get()));
    HVD_CUDNN(cudnnPoolingForward(dnn_, t->pool, &one, t->y2.d, t->ay2.get(),
                                  &zero, t->p.d, t->ap.get()));
    const bool drop = training && dropout;
    drop_ = drop;
    if (drop) {
      HVD_CUDNN(cudnnDropoutForward(
          dnn_, t->drop1.d, t->p.d, t->ap.get(), t->p.d, t->ad1.get(),
          t->drop1.reserve.get(), t->drop1.reserve.bytes()));
    } else {
      HVD_CUDA(cudaMemcpy(t->ad1.get(), t->ap.get(),
                          static_cast<size_t>(n) * 9216 * 4,
                          cudaMemcpyDeviceToDevice));
    }
    // dense1: h (128 x n, column-major) = W3c^T (128 x 9216) . d1 (9216 x n).
    HVD_CUBLAS(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, 128, n, 9216, &one,
                           w_[kDense1W].f(), 9216, t->ad1.f(), 9216, &zero,
                           t->ah.f(), 128));
    HVD_CUDNN(cudnnAddTensor(dnn_, &one, t->b3.d, w_[kDense1B].get(), &one,
                             t->h.d, t->ah.get()));
    HVD_CUDNN(cudnnActivationForward(dnn_, t->relu, &one, t->h.d, t->ah.get(),
                                     &zero, t->h.d, t->ah.get()));
    if (drop) {
      HVD_CUDNN(cudnnDropoutForward(
          dnn_, t->drop2.d, t->h.d, t->ah.get(), t->h.d, t->ad2.get(),
          t->drop2.reserve.get(), t->drop2.reserve.bytes()));
    } else {
      HVD_CUDA(cudaMemcpy(t->ad2.get(), t->ah.get(),
                          static_cast<size_t>(n) * 128 * 4,
                          cudaMemcpyDeviceToDevice));
    }
    // dense2: z (10 x n) = W4c^T (10 x 128) . d2 (128 x n).
    HVD_CUBLAS(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, 10, n, 128, &one,
                           w_[kDense2W].f(), 128, t->ad2.f(), 128, &zero,
                           t->az.f(), 10));
    HVD_CUDNN(cudnnAddTensor(dnn_, &one, t->b4.d, w_[kDense2B].get(), &one,
                             t->z.d, t->az.get()));
    HVD_CUDA(cudaMemcpy(logits, t->az.get(), static_cast<size_t>(n) * 10 * 4,
                        cudaMemcpyDeviceToHost));
    last_ = training ? t : nullptr;
    return Status::Ok();
  }

  Status Backward(std::vector<Param>& params, const float* dlogits,
                  const std::function<void(int)>& ready) override {
    if (!last_) {
      return Status::FailedPrecondition("backward", "needs a training forward");
    }
    HVD_CUDA(cudaSetDevice(device_));
    Net* t = last_;
    const int n = t->n;
    const float one = 1, zero = 0;
    auto out = [&](int k) -> Status {
      HVD_CUDA(cudaMemcpy(params[k].grad.data(), g_[k].get(),
                          params[k].grad.size() * 4, cudaMemcpyDeviceToHost));
      if (ready) ready(k);
      return Status::Ok();
    };
    HVD_CUDA(cudaMemcpy(t->dz.get(), dlogits, static_cast<size_t>(n) * 10 * 4,
                        cudaMemcpyHostToDevice));
    // dense2: dW4c (128 x 10) = d2 (128 x n) . dz^T; db4 = sum over n;
    // dd2 (128 x n) = W4c (128 x 10) . dz.
    HVD_CUBLAS(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_T, 128, 10, n, &one,
                           t->ad2.f(), 128, t->dz.f(), 10, &zero,
                           g_[kDense2W].f(), 128));
    HVD_CUDNN(cudnnConvolutionBackwardBias(dnn_, &one, t->z.d, t->dz.get(),
                                           &zero, t->b4.d, g_[kDense2B].get()));
    HVD_CUBLAS(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, 128, n, 10, &one,
                           w_[kDense2W].f(), 128, t->dz.f(), 10, &zero,
                           t->dd2.f(), 128));
    HVD_RETURN_IF_ERROR(out(kDense2W));
    HVD_RETURN_IF_ERROR(out(kDense2B));
    // Dropout 2 and ReLU.
    if (drop_) {
      HVD_CUDNN(cudnnDropoutBackward(
          dnn_, t->drop2.d, t->h.d, t->dd2.get(), t->h.d, t->dh.get(),
          t->drop2.reserve.get(), t->drop2.reserve.bytes()));
    } else {
      HVD_CUDA(cudaMemcpy(t->dh.get(), t->dd2.get(),
                          static_cast<size_t>(n) * 128 * 4,
                          cudaMemcpyDeviceToDevice));
    }
    HVD_CUDNN(cudnnActivationBackward(dnn_, t->relu, &one, t->h.d, t->ah.get(),
                                      t->h.d, t->dh.get(), t->h.d, t->ah.get(),
                                      &zero, t->h.d, t->dh.get()));
    // dense1.
    HVD_CUBLAS(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_T, 9216, 128, n, &one,
                           t->ad1.f(), 9216, t->dh.f(), 128, &zero,
                           g_[kDense1W].f(), 9216));
    HVD_CUDNN(cudnnConvolutionBackwardBias(dnn_, &one, t->h.d, t->dh.get(),
                                           &zero, t->b3.d, g_[kDense1B].get()));
    HVD_CUBLAS(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, 9216, n, 128, &one,
                           w_[kDense1W].f(), 9216, t->dh.f(), 128, &zero,
                           t->dd1.f(), 9216));
    HVD_RETURN_IF_ERROR(out(kDense1W));
    HVD_RETURN_IF_ERROR(out(kDense1B));
    if (drop_) {
      HVD_CUDNN(cudnnDropoutBackward(
          dnn_, t->drop1.d, t->p.d, t->dd1.get(), t->p.d, t->dp.get(),
          t->drop1.reserve.get(), t->drop1.reserve.bytes()));
    } else {
      HVD_CUDA(cudaMemcpy(t->dp.get(), t->dd1.get(),
                          static_cast<size_t>(n) * 9216 * 4,
                          cudaMemcpyDeviceToDevice));
    }
    // Pooling, conv2's ReLU, conv2.
    HVD_CUDNN(cudnnPoolingBackward(dnn_, t->pool, &one, t->p.d, t->ap.get(),
                                   t->p.d, t->dp.get(), t->y2.d, t->ay2.get(),
                                   &zero, t->y2.d, t->dy2.get()));
    HVD_CUDNN(cudnnActivationBackward(
        dnn_, t->relu, &one, t->y2.d, t->ay2.get(), t->y2.d, t->dy2.get(),
        t->y2.d, t->ay2.get(), &zero, t->y2.d, t->dy2.get()));
    HVD_CUDNN(cudnnConvolutionBackwardFilter(
        dnn_, &one, t->y1.d, t->ay1.get(), t->y2.d, t->dy2.get(), t->c2.conv,
        t->c2.bwd_filter, t->workspace.get(), t->workspace.bytes(), &zero,
        t->c2.filter, g_[kConv2W].get()));
    HVD_CUDNN(cudnnConvolutionBackwardBias(dnn_, &one, t->y2.d, t->dy2.get(),
                                           &zero, t->b2.d, g_[kConv2B].get()));
    HVD_CUDNN(cudnnConvolutionBackwardData(
        dnn_, &one, t->c2.filter, w_[kConv2W].get(), t->y2.d, t->dy2.get(),
        t->c2.conv, t->c2.bwd_data, t->workspace.get(), t->workspace.bytes(),
        &zero, t->y1.d, t->dy1.get()));
    HVD_RETURN_IF_ERROR(out(kConv2W));
    HVD_RETURN_IF_ERROR(out(kConv2B));
    // conv1's ReLU and conv1 (no gradient for the images).
    HVD_CUDNN(cudnnActivationBackward(
        dnn_, t->relu, &one, t->y1.d, t->ay1.get(), t->y1.d, t->dy1.get(),
        t->y1.d, t->ay1.get(), &zero, t->y1.d, t->dy1.get()));
    HVD_CUDNN(cudnnConvolutionBackwardFilter(
        dnn_, &one, t->x.d, t->dx.get(), t->y1.d, t->dy1.get(), t->c1.conv,
        t->c1.bwd_filter, t->workspace.get(), t->workspace.bytes(), &zero,
        t->c1.filter, g_[kConv1W].get()));
    HVD_CUDNN(cudnnConvolutionBackwardBias(dnn_, &one, t->y1.d, t->dy1.get(),
                                           &zero, t->b1.d, g_[kConv1B].get()));
    HVD_RETURN_IF_ERROR(out(kConv1W));
    HVD_RETURN_IF_ERROR(out(kConv1B));
    return Status::Ok();
  }

 private:
  StatusOr<Net*> NetFor(int n) {
    auto found = nets_.find(n);
    if (found != nets_.end()) return found->second.get();
    auto net = std::make_unique<Net>();
    Net& t = *net;
    t.n = n;
    HVD_RETURN_IF_ERROR(t.x.Set(n, 1, 28, 28));
    HVD_RETURN_IF_ERROR(t.y1.Set(n, 32, 26, 26));
    HVD_RETURN_IF_ERROR(t.y2.Set(n, 64, 24, 24));
    HVD_RETURN_IF_ERROR(t.p.Set(n, 64, 12, 12));
    HVD_RETURN_IF_ERROR(t.h.Set(n, 128, 1, 1));
    HVD_RETURN_IF_ERROR(t.z.Set(n, 10, 1, 1));
    HVD_RETURN_IF_ERROR(t.b1.Set(1, 32, 1, 1));
    HVD_RETURN_IF_ERROR(t.b2.Set(1, 64, 1, 1));
    HVD_RETURN_IF_ERROR(t.b3.Set(1, 128, 1, 1));
    HVD_RETURN_IF_ERROR(t.b4.Set(1, 10, 1, 1));
    HVD_RETURN_IF_ERROR(t.c1.Set(dnn_, t.x, t.y1, 32, 1, false));
    HVD_RETURN_IF_ERROR(t.c2.Set(dnn_, t.y1, t.y2, 64, 32, true));
    HVD_CUDNN(cudnnCreatePoolingDescriptor(&t.pool));
    HVD_CUDNN(cudnnSetPooling2dDescriptor(
        t.pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2));
    HVD_CUDNN(cudnnCreateActivationDescriptor(&t.relu));
    HVD_CUDNN(cudnnSetActivationDescriptor(t.relu, CUDNN_ACTIVATION_RELU,
                                           CUDNN_NOT_PROPAGATE_NAN, 0.0));
    HVD_RETURN_IF_ERROR(t.drop1.Set(dnn_, 0.25f, seed_, t.p));
    HVD_RETURN_IF_ERROR(t.drop2.Set(dnn_, 0.5f, seed_ + 1, t.h));
    const size_t nn = static_cast<size_t>(n);
    struct {
      DeviceBuffer* b;
      size_t floats;
    } sizes[] = {{&t.dx, nn * 784},       {&t.ay1, nn * 32 * 676},
                 {&t.dy1, nn * 32 * 676}, {&t.ay2, nn * 64 * 576},
                 {&t.dy2, nn * 64 * 576}, {&t.ap, nn * 9216},
                 {&t.dp, nn * 9216},      {&t.ad1, nn * 9216},
                 {&t.dd1, nn * 9216},     {&t.ah, nn * 128},
                 {&t.dh, nn * 128},       {&t.ad2, nn * 128},
                 {&t.dd2, nn * 128},      {&t.az, nn * 10},
                 {&t.dz, nn * 10}};
    for (auto& s : sizes) HVD_RETURN_IF_ERROR(s.b->Resize(s.floats * 4));
    HVD_RETURN_IF_ERROR(t.workspace.Resize(
        std::max<size_t>(1, std::max(t.c1.workspace, t.c2.workspace))));
    Net* raw = net.get();
    nets_[n] = std::move(net);
    return raw;
  }

  int device_;
  uint64_t seed_;
  cudnnHandle_t dnn_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  DeviceBuffer w_[8], g_[8];
  std::map<int, std::unique_ptr<Net>> nets_;
  Net* last_ = nullptr;
  bool drop_ = false;
};

}  // namespace

int VisibleGpus() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

StatusOr<std::unique_ptr<Compute>> MakeCudnnCompute(int device, uint64_t seed) {
  if (device >= VisibleGpus()) {
    return Status::FailedPrecondition(
        "GPU " + std::to_string(device),
        "is not visible (" + std::to_string(VisibleGpus()) + " devices)");
  }
  auto c = std::make_unique<CudnnCompute>(device, seed);
  HVD_RETURN_IF_ERROR(c->Init());
  return std::unique_ptr<Compute>(std::move(c));
}

}  // namespace hvd::mnist
