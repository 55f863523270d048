// train_mnist's flags, parsed into TrainOptions (trainer.h), and where
// the bundled digits are found.
#include <filesystem>
#include <string>
#include <vector>

#include "mnist/numbers.h"
#include "mnist/trainer.h"

#ifndef HVD_MNIST_DATA_DIR
#define HVD_MNIST_DATA_DIR "examples/mnist/data"
#endif
#ifndef HVD_MNIST_INSTALLED_DATA_DIR
#define HVD_MNIST_INSTALLED_DATA_DIR "../share/hvd/mnist"
#endif

namespace hvd::mnist {
namespace {

// The bundled digits: an installed train_mnist finds them in the install
// tree beside it (so the tree may be moved); one run from the build tree
// reads the source tree's.
std::string DefaultDataDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto installed = exe.parent_path() / HVD_MNIST_INSTALLED_DATA_DIR;
    if (std::filesystem::exists(installed / "t10k-labels-idx1-ubyte.gz", ec))
      return installed.lexically_normal().string();
  }
  return HVD_MNIST_DATA_DIR;
}

}  // namespace

std::string TrainUsage() {
  return "usage: train_mnist [--mode basic|advanced] [--data-dir DIR]\n"
         "  [--batch-size N] [--epochs N] [--lr X] [--warmup-epochs N]\n"
         "  [--threads N] [--log-dir DIR] [--checkpoint-dir DIR]\n"
         "  [--resume FILE] [--seed N] [--train-limit N] [--test-limit N]\n"
         "  [--device auto|cpu|gpu] [--no-augment] [--no-normalize]\n"
         "  [--elastic [--batches-per-commit N]]\n"
         "Horovod's Keras MNIST examples (basic: keras_mnist.py; advanced,\n"
         "the default: keras_mnist_advanced.py). Run under horovodrun.\n"
         "Inputs are standardised with the training set's pixel mean and\n"
         "standard deviation; --no-normalize feeds the examples' plain\n"
         "x / 255. --resume keeps the checkpoint's input scaling.\n"
         "--elastic trains under hvd::elastic::run for an elastic job\n"
         "(horovodrun --min-np/--host-discovery-script): a lost or added\n"
         "host resets to the last commit (every N batches, 10) and goes on.\n";
}

StatusOr<TrainOptions> ParseTrainArgs(const std::vector<std::string>& args,
                                      bool* help) {
  TrainOptions o;
  *help = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> StatusOr<std::string> {
      if (i + 1 >= args.size()) {
        return Status::InvalidArgument(a, "needs a value");
      }
      return args[++i];
    };
    auto int_flag = [&](int* out, int64_t min, int64_t max) -> Status {
      HVD_ASSIGN_OR_RETURN(std::string v, value());
      HVD_ASSIGN_OR_RETURN(int64_t n, ParseNumber<int64_t>(v, a, min, max));
      *out = static_cast<int>(n);
      return Status::Ok();
    };
    if (a == "--help" || a == "-h") {
      *help = true;
    } else if (a == "--mode") {
      HVD_ASSIGN_OR_RETURN(o.mode, value());
      if (o.mode != "basic" && o.mode != "advanced") {
        return Status::InvalidArgument(
            "--mode", "must be basic or advanced, not '" + o.mode + "'");
      }
    } else if (a == "--data-dir") {
      HVD_ASSIGN_OR_RETURN(o.data_dir, value());
    } else if (a == "--batch-size") {
      HVD_RETURN_IF_ERROR(int_flag(&o.batch_size, 1, 65536));
    } else if (a == "--epochs") {
      HVD_RETURN_IF_ERROR(int_flag(&o.epochs, 1, 100000));
    } else if (a == "--lr") {
      HVD_ASSIGN_OR_RETURN(std::string v, value());
      HVD_ASSIGN_OR_RETURN(o.lr, ParseNumber(v, a, 1e-12, 1e6));
    } else if (a == "--warmup-epochs") {
      HVD_RETURN_IF_ERROR(int_flag(&o.warmup_epochs, 0, 100000));
    } else if (a == "--threads") {
      HVD_RETURN_IF_ERROR(int_flag(&o.threads, 1, 1024));
    } else if (a == "--log-dir") {
      HVD_ASSIGN_OR_RETURN(o.log_dir, value());
    } else if (a == "--checkpoint-dir") {
      HVD_ASSIGN_OR_RETURN(o.checkpoint_dir, value());
    } else if (a == "--resume") {
      HVD_ASSIGN_OR_RETURN(o.resume, value());
    } else if (a == "--seed") {
      int seed = 0;
      HVD_RETURN_IF_ERROR(int_flag(&seed, 0, 1 << 30));
      o.seed = static_cast<uint64_t>(seed);
    } else if (a == "--train-limit") {
      HVD_RETURN_IF_ERROR(int_flag(&o.train_limit, 1, 1 << 30));
    } else if (a == "--test-limit") {
      HVD_RETURN_IF_ERROR(int_flag(&o.test_limit, 1, 1 << 30));
    } else if (a == "--device") {
      HVD_ASSIGN_OR_RETURN(o.device, value());
      if (o.device != "auto" && o.device != "cpu" && o.device != "gpu") {
        return Status::InvalidArgument(
            "--device", "must be auto, cpu or gpu, not '" + o.device + "'");
      }
    } else if (a == "--no-augment") {
      o.augment = false;
    } else if (a == "--no-normalize") {
      o.normalize = false;
    } else if (a == "--elastic") {
      o.elastic = true;
    } else if (a == "--batches-per-commit") {
      HVD_RETURN_IF_ERROR(int_flag(&o.batches_per_commit, 1, 1 << 20));
    } else {
      return Status::InvalidArgument(
          a, "is not a flag of train_mnist (see --help)");
    }
  }
  if (o.data_dir.empty()) o.data_dir = DefaultDataDir();
  if (o.elastic && o.mode == "basic") {
    return Status::InvalidArgument("--elastic",
                                   "runs the advanced mode; drop --mode basic");
  }
  return o;
}

}  // namespace hvd::mnist
