// Adadelta as Keras implements it (rho 0.95, epsilon 1e-7 by default):
//   accum_grad = rho * accum_grad + (1 - rho) * g^2
//   update     = g * sqrt(accum_var + eps) / sqrt(accum_grad + eps)
//   w         -= lr * update
//   accum_var  = rho * accum_var + (1 - rho) * update^2
#pragma once

#include <string>
#include <vector>

#include "mnist/model.h"

namespace hvd::mnist {

class Adadelta {
 public:
  explicit Adadelta(const std::vector<Param>& params, float rho = 0.95f,
                    float epsilon = 1e-7f);

  // One step with learning rate `lr` on every parameter's grad.
  void Apply(std::vector<Param>& params, float lr);

  // The optimizer's state, one buffer per parameter and kind, in the
  // order of the parameters (for broadcasts and checkpoints).
  struct Slot {
    std::string name;  // "optimizer/<param>/accum_grad" or ".../accum_var"
    std::vector<float>* data;
  };
  std::vector<Slot> slots();

 private:
  float rho_, epsilon_;
  std::vector<std::vector<float>> accum_grad_, accum_var_;
  std::vector<std::string> names_;
};

}  // namespace hvd::mnist
