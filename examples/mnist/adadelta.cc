#include "examples/mnist/adadelta.h"

#include <cmath>

namespace hvd::mnist {

Adadelta::Adadelta(const std::vector<Param>& params, float rho, float epsilon)
    : rho_(rho), epsilon_(epsilon) {
  for (const Param& p : params) {
    accum_grad_.emplace_back(p.value.size(), 0.0f);
    accum_var_.emplace_back(p.value.size(), 0.0f);
    names_.push_back(p.name);
  }
}

void Adadelta::Apply(std::vector<Param>& params, float lr) {
  const float rho = rho_, eps = epsilon_;
  for (size_t k = 0; k < params.size(); ++k) {
    float* w = params[k].value.data();
    const float* g = params[k].grad.data();
    float* ag = accum_grad_[k].data();
    float* av = accum_var_[k].data();
    const size_t n = params[k].value.size();
    for (size_t i = 0; i < n; ++i) {
      ag[i] = rho * ag[i] + (1 - rho) * g[i] * g[i];
      float update = g[i] * std::sqrt(av[i] + eps) / std::sqrt(ag[i] + eps);
      w[i] -= lr * update;
      av[i] = rho * av[i] + (1 - rho) * update * update;
    }
  }
}

std::vector<Adadelta::Slot> Adadelta::slots() {
  std::vector<Slot> out;
  for (size_t k = 0; k < names_.size(); ++k) {
    out.push_back({"optimizer/" + names_[k] + "/accum_grad", &accum_grad_[k]});
    out.push_back({"optimizer/" + names_[k] + "/accum_var", &accum_var_[k]});
  }
  return out;
}

}  // namespace hvd::mnist
