// train_mnist: see trainer.h. Bad flags exit 2 with one line; a failed
// run exits 1 with the error.
#include <cstdio>
#include <string>
#include <vector>

#include "hvd/hvd.h"
#include "mnist/trainer.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  bool help = false;
  auto options = hvd::mnist::ParseTrainArgs(args, &help);
  if (help) {
    std::fputs(hvd::mnist::TrainUsage().c_str(), stdout);
    return 0;
  }
  if (!options.ok()) {
    std::fprintf(stderr, "train_mnist: %s\n",
                 options.status().ToString().c_str());
    return 2;
  }
  if (hvd::Status s = hvd::init(); !s.ok()) {
    std::fprintf(stderr, "train_mnist: %s\n", s.ToString().c_str());
    return 1;
  }
  hvd::Status s = hvd::mnist::Train(*options);
  if (!s.ok()) {
    std::fprintf(stderr, "train_mnist: rank %d: %s\n", hvd::rank(),
                 s.ToString().c_str());
    (void)hvd::shutdown();
    return 1;
  }
  return hvd::shutdown().ok() ? 0 : 1;
}
