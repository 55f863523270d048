// The Keras MNIST CNN of Horovod's examples, on oneDNN primitives:
//   Conv2D 32 3x3 ReLU -> Conv2D 64 3x3 ReLU -> MaxPool 2x2 -> Dropout 0.25
//   -> Flatten -> Dense 128 ReLU -> Dropout 0.5 -> Dense 10 softmax,
// categorical cross-entropy. Convolutions, pooling and the dense layers are
// oneDNN primitives (in the memory formats oneDNN picks for this CPU);
// only softmax, the loss and dropout masks are loops of ours.
//
// Parameters live in plain layouts (OIHW, OI) so that the optimizer, the
// gradient allreduce, broadcasts and checkpoints see the same bytes on
// every rank whatever CPU each runs on; they are reordered to and from the
// primitives' formats once per step.
//
// Thread-safety: one thread uses a Model.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hvd/status.h"

namespace hvd::mnist {

inline constexpr int kImageSide = 28;
inline constexpr int kClasses = 10;

struct Param {
  std::string name;           // "conv1/kernel", ...
  std::vector<int64_t> dims;  // plain layout
  std::vector<float> value;
  std::vector<float> grad;  // of the last Backward
};

// The order of Model::params(), which both computes rely on.
enum ParamIndex {
  kConv1W,
  kConv1B,
  kConv2W,
  kConv2B,
  kDense1W,
  kDense1B,
  kDense2W,
  kDense2B
};

struct BatchResult {
  double loss = 0;  // mean cross-entropy over the batch
  int correct = 0;  // argmax hits
};

// The arithmetic of a batch on one device: oneDNN on the CPU
// (model_dnnl.cc), cuDNN and cuBLAS on a GPU (model_cudnn.cc). Parameters
// and gradients stay on the host in their plain layouts.
class Compute {
 public:
  virtual ~Compute() = default;
  // The n x 10 logits (host) of `images`; with `training` the activations
  // are kept for Backward, and dropout applies when `dropout`.
  virtual Status Forward(const std::vector<Param>& params, const float* images,
                         int n, bool training, bool dropout, float* logits) = 0;
  // From the logits' gradient (host) to every parameter's grad, calling
  // ready(k) as each is final.
  virtual Status Backward(std::vector<Param>& params, const float* dlogits,
                          const std::function<void(int)>& ready) = 0;
  virtual std::string Describe() const = 0;
};

std::unique_ptr<Compute> MakeDnnlCompute(uint64_t seed);
// FailedPrecondition with the reason where this build has no cuDNN or the
// device is not there.
StatusOr<std::unique_ptr<Compute>> MakeCudnnCompute(int device, uint64_t seed);
// GPUs visible to this process (0 without CUDA).
int VisibleGpus();

class Model {
 public:
  // Keras' defaults: Glorot-uniform kernels, zero biases, from `seed`; on
  // the CPU.
  explicit Model(uint64_t seed);
  // device -1: the CPU; else that CUDA device.
  static StatusOr<std::unique_ptr<Model>> Create(uint64_t seed, int device);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // images: n x 28 x 28 floats in [0, 1]; labels: n digits. With
  // `training`, dropout is on (masks from the model's own generator) and
  // the activations are kept for Backward.
  StatusOr<BatchResult> Forward(const float* images, const uint8_t* labels,
                                int n, bool training);
  // Gradients of the mean loss of the last training Forward into grad.
  // `ready(k)` is called as soon as params()[k].grad is final (last layer
  // first), so its exchange can overlap the rest of the pass.
  Status Backward(const std::function<void(int)>& ready = nullptr);

  // Dropout on in training forwards (the default); off makes a training
  // forward deterministic (gradient checks).
  void set_dropout(bool on) { dropout_ = on; }
  std::string Describe() const;

  std::vector<Param>& params() { return params_; }
  const std::vector<Param>& params() const { return params_; }

 private:
  Model() = default;
  void Init(uint64_t seed);

  std::vector<Param> params_;
  std::unique_ptr<Compute> compute_;
  std::vector<float> logits_, probs_;
  std::vector<uint8_t> labels_;
  int last_n_ = 0;
  bool have_last_ = false;
  bool dropout_ = true;
};

}  // namespace hvd::mnist
