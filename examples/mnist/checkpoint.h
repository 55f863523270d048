// The training state in a safetensors checkpoint: what it holds (weights,
// then the optimizer's slots), writing it with the epoch's figures, and
// resuming from it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "hvd/status.h"
#include "mnist/adadelta.h"
#include "mnist/images.h"
#include "mnist/model.h"

namespace hvd::mnist {

// Everything that defines the training state: weights, then the
// optimizer's slots.
std::vector<std::pair<std::string, std::vector<float>*>> StateBuffers(
    Model& model, Adadelta& opt);

// An epoch's figures, averaged over the ranks.
struct Metrics {
  double loss = 0, accuracy = 0, val_loss = 0, val_accuracy = 0;
};

Status SaveCheckpoint(const std::string& path, Model& model, Adadelta& opt,
                      int epoch, double lr, const Metrics& m,
                      const std::string& mode, const InputScaling& scaling);

struct Resumed {
  int epoch = 0;  // epochs done
  double lr = 0;
  InputScaling scaling;
};

// Restores weights and optimizer state; returns where training stood and
// the input scaling it was trained with (a checkpoint without one was
// trained on plain x / 255).
StatusOr<Resumed> Resume(const std::string& path, Model& model, Adadelta& opt);

}  // namespace hvd::mnist
