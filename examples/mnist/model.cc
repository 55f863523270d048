#include "mnist/model.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace hvd::mnist {
Model::Model(uint64_t seed) : compute_(MakeDnnlCompute(seed)) { Init(seed); }

void Model::Init(uint64_t seed) {
  auto add = [&](std::string name, std::vector<int64_t> dims) {
    Param p;
    p.name = std::move(name);
    p.dims = std::move(dims);
    size_t n = 1;
    for (int64_t d : p.dims) n *= static_cast<size_t>(d);
    p.value.assign(n, 0.0f);
    p.grad.assign(n, 0.0f);
    params_.push_back(std::move(p));
  };
  add("conv1/kernel", {32, 1, 3, 3});
  add("conv1/bias", {32});
  add("conv2/kernel", {64, 32, 3, 3});
  add("conv2/bias", {64});
  add("dense1/kernel", {128, 64, 12, 12});
  add("dense1/bias", {128});
  add("dense2/kernel", {10, 128});
  add("dense2/bias", {10});
  // Glorot uniform: limit sqrt(6 / (fan_in + fan_out)), with Keras' fans
  // (receptive field times channels).
  std::mt19937_64 gen(seed);
  for (int k : {kConv1W, kConv2W, kDense1W, kDense2W}) {
    Param& p = params_[k];
    int64_t receptive = 1;
    for (size_t i = 2; i < p.dims.size(); ++i) receptive *= p.dims[i];
    double fan_out = static_cast<double>(p.dims[0]) *
                     (p.dims.size() == 4 && k != kDense1W ? receptive : 1);
    double fan_in = static_cast<double>(p.dims[1]) * receptive;
    double limit = std::sqrt(6.0 / (fan_in + fan_out));
    std::uniform_real_distribution<float> u(static_cast<float>(-limit),
                                            static_cast<float>(limit));
    for (float& v : p.value) v = u(gen);
  }
}

Model::~Model() = default;

StatusOr<std::unique_ptr<Model>> Model::Create(uint64_t seed, int device) {
  if (device < 0) return std::make_unique<Model>(seed);
  HVD_ASSIGN_OR_RETURN(std::unique_ptr<Compute> compute,
                       MakeCudnnCompute(device, seed));
  std::unique_ptr<Model> m(new Model());
  m->compute_ = std::move(compute);
  m->Init(seed);
  return m;
}

std::string Model::Describe() const { return compute_->Describe(); }

StatusOr<BatchResult> Model::Forward(const float* images, const uint8_t* labels,
                                     int n, bool training) {
  if (n <= 0) return Status::InvalidArgument("batch", "is empty");
  logits_.resize(static_cast<size_t>(n) * kClasses);
  probs_.resize(logits_.size());
  have_last_ = false;
  HVD_RETURN_IF_ERROR(compute_->Forward(params_, images, n, training, dropout_,
                                        logits_.data()));
  // Softmax and cross-entropy (probabilities clipped to [1e-7, 1 - 1e-7]
  // for the loss, as Keras does).
  BatchResult result;
  labels_.assign(labels, labels + n);
  for (int i = 0; i < n; ++i) {
    const float* row = logits_.data() + i * kClasses;
    float* p = probs_.data() + i * kClasses;
    float m = *std::max_element(row, row + kClasses);
    double sum = 0;
    for (int c = 0; c < kClasses; ++c) {
      p[c] = std::exp(row[c] - m);
      sum += p[c];
    }
    int best = 0;
    for (int c = 0; c < kClasses; ++c) {
      p[c] = static_cast<float>(p[c] / sum);
      if (p[c] > p[best]) best = c;
    }
    double pl = std::clamp<double>(p[labels[i]], 1e-7, 1 - 1e-7);
    result.loss -= std::log(pl);
    result.correct += best == labels[i];
  }
  result.loss /= n;
  have_last_ = training;
  last_n_ = n;
  return result;
}

Status Model::Backward(const std::function<void(int)>& ready) {
  if (!have_last_) {
    return Status::FailedPrecondition("backward", "needs a training forward");
  }
  // d(mean loss)/d(logits) = (softmax - one-hot) / n.
  const int n = last_n_;
  std::vector<float> dz(static_cast<size_t>(n) * kClasses);
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < kClasses; ++c) {
      dz[i * kClasses + c] =
          (probs_[i * kClasses + c] - (labels_[i] == c ? 1.0f : 0.0f)) / n;
    }
  }
  return compute_->Backward(params_, dz.data(), ready);
}

}  // namespace hvd::mnist
