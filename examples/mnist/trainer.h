// train_mnist: Horovod's two Keras MNIST examples in one program.
//   --mode basic     keras_mnist.py: epochs = ceil(12 / size), Adadelta(1.0
//                    * size), every rank over the whole training set in its
//                    own order, initial state broadcast from rank 0, a
//                    checkpoint per epoch (rank 0), test metrics at the end.
//   --mode advanced  keras_mnist_advanced.py (the default): per-rank shards,
//                    augmentation, and the callbacks in Horovod's order.
//   --elastic        the advanced mode as an elastic job's worker: ranks
//                    may come and go (see TrainOptions::elastic).
#pragma once

#include <string>
#include <vector>

#include "hvd/status.h"

namespace hvd::mnist {

struct TrainOptions {
  std::string mode = "advanced";
  std::string data_dir;  // default: the bundled digits
  int batch_size = 128;
  int epochs = -1;  // basic: ceil(12 / size); advanced: 24
  double lr = 1.0;
  int warmup_epochs = 5;
  int threads = 0;  // 0: the cores divided by the local size
  std::string log_dir = "./logs";
  std::string checkpoint_dir = ".";
  std::string csv = "training_log.csv";  // advanced; in checkpoint_dir
  std::string resume;
  uint64_t seed = 42;
  // For short runs (tests, benchmarks): use only the first N images.
  int train_limit = 0, test_limit = 0;
  bool augment = true;
  // Inputs standardised with the training set's pixel mean and standard
  // deviation (PyTorch's MNIST recipe, where the reference
  // accuracy comes from); false: Keras' examples' plain x / 255.
  bool normalize = true;
  // auto: the rank's GPU (cuDNN) when one is visible, else the CPU.
  std::string device = "auto";
  // Elastic training (advanced mode): under hvd::elastic::run, committing
  // the weights, optimizer state, epoch, batch and schedule every
  // `batches_per_commit` batches and at each epoch's end.
  bool elastic = false;
  int batches_per_commit = 10;
};

// Strict: unknown flags and bad values are errors naming the flag. `help`
// is set for --help.
StatusOr<TrainOptions> ParseTrainArgs(const std::vector<std::string>& args,
                                      bool* help);
std::string TrainUsage();

// Runs the whole training (hvd::init() must have been called).
Status Train(const TrainOptions& options);

}  // namespace hvd::mnist
