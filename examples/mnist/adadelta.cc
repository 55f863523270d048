#include "mnist/adadelta.h"

#include "mnist/kernels.h"

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
    AdadeltaUpdate(params[k].value.data(), params[k].grad.data(),
                   accum_grad_[k].data(), accum_var_[k].data(),
                   params[k].value.size(), lr, rho, eps);
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
