#include "mnist/trainer.h"

#include <omp.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <thread>

#include "hvd/elastic.h"
#include "hvd/hvd.h"
#include "mnist/adadelta.h"
#include "mnist/augment.h"
#include "mnist/checkpoint.h"
#include "mnist/images.h"
#include "mnist/model.h"
#include "mnist/numbers.h"
#include "mnist/progress.h"
#include "mnist/schedule.h"
#include "mnist/tensorboard.h"

namespace hvd::mnist {
namespace {

// Horovod's BroadcastGlobalVariablesCallback(0): every rank takes rank 0's
// weights and optimizer state.
Status BroadcastState(Model& model, Adadelta& opt) {
  std::vector<hvd::Handle> handles;
  for (auto& [name, buf] : StateBuffers(model, opt)) {
    handles.push_back(
        hvd::broadcast_async("state/" + name,
                             hvd::Tensor{buf->data(),
                                         hvd::DataType::kFloat32,
                                         {static_cast<int64_t>(buf->size())}},
                             0));
  }
  Status first;
  for (auto& h : handles) first.Update(h.wait());
  return first;
}

// Data-parallel ranks apply the same averaged gradients to the same state,
// so it must stay the same on every rank, bit for bit. Checked once an
// epoch: a hash of every weight and optimizer slot, whose minimum and
// maximum over the ranks must agree. False when they do not.
StatusOr<bool> RanksAgree(Model& model, Adadelta& opt, int epoch) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a over 32-bit words
  for (auto& [name, buf] : StateBuffers(model, opt)) {
    for (float v : *buf) {
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof(bits));
      h = (h ^ bits) * 1099511628211ULL;
    }
  }
  // One allreduce: the minimum of {x, -x} is {min x, -max x}.
  const auto x = static_cast<int64_t>(h >> 2);
  int64_t v[2] = {x, -x};
  HVD_RETURN_IF_ERROR(hvd::allreduce("state-check." + std::to_string(epoch),
                                     hvd::Tensor{v, hvd::DataType::kInt64, {2}},
                                     hvd::ReduceOp::kMin));
  return v[0] == -v[1];
}

// Horovod's MetricAverageCallback: the epoch's metrics averaged over ranks.
Status AverageMetrics(Metrics* m, int epoch) {
  double v[4] = {m->loss, m->accuracy, m->val_loss, m->val_accuracy};
  HVD_RETURN_IF_ERROR(hvd::allreduce(
      "metrics." + std::to_string(epoch),
      hvd::Tensor{v, hvd::DataType::kFloat64, {4}}, hvd::ReduceOp::kAverage));
  *m = {v[0], v[1], v[2], v[3]};
  return Status::Ok();
}

// Loss and accuracy over `count` images of `data` from `first` on (wrapping
// at the end), in batches of `batch`.
StatusOr<std::pair<double, double>> Evaluate(Model& model, const Images& data,
                                             int batch, int count, int first) {
  double loss = 0;
  int64_t correct = 0, seen = 0;
  std::vector<float> x(static_cast<size_t>(batch) * kPixels);
  std::vector<uint8_t> y(batch);
  const int total = std::max(1, count);
  for (int at = 0; at < total; at += batch) {
    const int n = std::min(batch, total - at);
    for (int i = 0; i < n; ++i) {
      int idx = (first + at + i) % data.count;
      std::copy_n(data.pixels.begin() + static_cast<ptrdiff_t>(idx) * kPixels,
                  kPixels, x.begin() + static_cast<ptrdiff_t>(i) * kPixels);
      y[i] = data.labels[idx];
    }
    HVD_ASSIGN_OR_RETURN(BatchResult r,
                         model.Forward(x.data(), y.data(), n, false));
    loss += r.loss * n;
    correct += r.correct;
    seen += n;
  }
  return std::make_pair(loss / seen, static_cast<double>(correct) / seen);
}

std::string Join(const std::string& dir, const std::string& file) {
  return dir.empty() || dir == "." ? file : dir + "/" + file;
}

class Trainer {
 public:
  Trainer(const TrainOptions& o, Images train, Images test,
          std::unique_ptr<Model> model)
      : o_(o),
        basic_(o.mode == "basic"),
        rank_(hvd::rank()),
        size_(hvd::size()),
        train_(std::move(train)),
        test_(std::move(test)),
        model_ptr_(std::move(model)),
        model_(*model_ptr_),
        opt_(model_.params()),
        gen_(static_cast<uint32_t>(o.seed * 1000 + rank_)),
        grads_(std::make_unique<hvd::DistributedGradients>()),
        x_(static_cast<size_t>(o.batch_size) * kPixels),
        y_(o.batch_size) {}

  Status Run() {
    const int epochs =
        o_.epochs > 0 ? o_.epochs : (basic_ ? (12 + size_ - 1) / size_ : 24);
    scaled_lr_ = o_.lr * size_;
    lr_ = scaled_lr_;
    int start_epoch = 0;
    // The inputs as the model was (or will be) trained on them: a resumed
    // run keeps its checkpoint's scaling, whatever the flags say.
    if (o_.resume.empty() && o_.normalize) scaling_ = Measure(train_);
    if (!o_.resume.empty()) {
      HVD_ASSIGN_OR_RETURN(Resumed resumed, Resume(o_.resume, model_, opt_));
      start_epoch = resumed.epoch;
      lr_ = resumed.lr;
      scaling_ = resumed.scaling;
      if (rank_ == 0) {
        std::printf("Resumed from %s after epoch %d (lr %g)\n",
                    o_.resume.c_str(), start_epoch, lr_);
      }
    }
    Apply(scaling_, train_);
    Apply(scaling_, test_);
    // Basic: the initial state is broadcast before training; advanced:
    // after the first batch (Horovod's callback); elastic: by run(). A
    // resumed run starts from the same file everywhere, and broadcasts
    // anyway.
    if (basic_) HVD_RETURN_IF_ERROR(BroadcastState(model_, opt_));
    broadcast_done_ = basic_ || o_.elastic;
    Reshard();
    if (rank_ == 0) {
      char inputs[64] = "x / 255";
      if (scaling_.mean != 0 || scaling_.std != 1) {
        std::snprintf(inputs, sizeof(inputs), "(x / 255 - %.4f) / %.4f",
                      scaling_.mean, scaling_.std);
      }
      std::printf(
          "train_mnist %s: %d ranks, %d train / %d test images, "
          "batch %d, %d epochs of %d steps, lr %g, inputs %s, %s, %d "
          "thread(s) per rank\n",
          o_.mode.c_str(), size_, train_.count, test_.count, o_.batch_size,
          epochs, steps_, lr_, inputs, model_.Describe().c_str(),
          omp_get_max_threads());
      std::printf("train_mnist: digits from %s\n", o_.data_dir.c_str());
    }
    if (rank_ == 0 && !basic_) HVD_RETURN_IF_ERROR(OpenLogs(start_epoch > 0));

    if (o_.elastic) {
      HVD_RETURN_IF_ERROR(TrainElastic(start_epoch, epochs));
    } else {
      for (int epoch = start_epoch; epoch < epochs; ++epoch) {
        if (rank_ == 0) std::printf("Epoch %d/%d\n", epoch + 1, epochs);
        Progress progress(steps_, rank_ == 0);
        HVD_ASSIGN_OR_RETURN(Metrics m, TrainEpoch(epoch, 0, progress));
        HVD_RETURN_IF_ERROR(CheckRanksAgree(epoch));
        HVD_RETURN_IF_ERROR(basic_ ? EndEpochBasic(epoch, m, progress)
                                   : EndEpochAdvanced(epoch, m, progress));
      }
    }
    csv_.reset();
    HVD_ASSIGN_OR_RETURN(
        auto test, Evaluate(model_, test_, o_.batch_size, test_.count, 0));
    if (rank_ == 0) {
      std::printf("Test loss: %.6f\nTest accuracy: %.6f\n", test.first,
                  test.second);
      std::fflush(stdout);
    }
    return Status::Ok();
  }

 private:
  struct CloseFile {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };

  // Rank 0 of the advanced mode: the CSV log (appended to on a resume)
  // and TensorBoard's two runs, as Keras' callbacks lay them out.
  Status OpenLogs(bool append) {
    std::string path = Join(o_.checkpoint_dir, o_.csv);
    csv_.reset(std::fopen(path.c_str(), append ? "a" : "w"));
    if (!csv_) return Status::Internal(path, "cannot be written");
    if (!append) {
      std::fprintf(csv_.get(),
                   "epoch,loss,accuracy,val_loss,val_accuracy,lr\n");
    }
    if (o_.log_dir.empty()) return Status::Ok();
    HVD_ASSIGN_OR_RETURN(tb_train_, EventWriter::Open(o_.log_dir + "/train"));
    HVD_ASSIGN_OR_RETURN(tb_val_,
                         EventWriter::Open(o_.log_dir + "/validation"));
    return Status::Ok();
  }

  // The next `n` images of this rank's order into x_ and y_ (advanced:
  // augmented).
  void NextBatch(int n) {
    for (int i = 0; i < n; ++i) {
      if (cursor_ == order_.size()) {
        std::shuffle(order_.begin(), order_.end(), gen_);
        cursor_ = 0;
      }
      const int idx = order_[cursor_++];
      const float* img =
          train_.pixels.data() + static_cast<ptrdiff_t>(idx) * kPixels;
      float* dst = x_.data() + static_cast<ptrdiff_t>(i) * kPixels;
      if (!basic_ && o_.augment) {
        Augment(img, dst, AugmentOptions{}, gen_);
      } else {
        std::copy_n(img, kPixels, dst);
      }
      y_[i] = train_.labels[idx];
    }
  }

  // This rank's share of the data and the schedule that follows from the
  // number of ranks: advanced, each rank its shard of the training set
  // (one stream reshuffled at each pass, across epochs: Keras' generator),
  // Keras' steps_per_epoch and validation_steps; basic reshuffles the
  // whole set per epoch. Again after each reset of an elastic job.
  void Reshard() {
    scaled_lr_ = o_.lr * size_;
    pool_.resize(train_.count);
    std::iota(pool_.begin(), pool_.end(), 0);
    if (!basic_) {
      std::vector<int> shard;
      for (int i = rank_; i < train_.count; i += size_) shard.push_back(i);
      pool_ = std::move(shard);
    }
    const int train_batches = train_.count / o_.batch_size;
    steps_ = basic_ ? (train_.count + o_.batch_size - 1) / o_.batch_size
                    : std::max(1, train_batches / size_);
    const int test_batches = test_.count / o_.batch_size;
    val_steps_ = std::max(1, 3 * test_batches / size_);
    order_ = pool_;
    cursor_ = 0;
    if (!basic_) std::shuffle(order_.begin(), order_.end(), gen_);
  }

  // Horovod's elastic Keras example in C++: the epochs under
  // hvd::elastic::run. The state (weights, optimizer slots, epoch, batch,
  // the learning rate and the plateau's progress, the best accuracy) is
  // committed every --batches-per-commit batches and after each epoch; a
  // reset goes back to the last commit, reshards for the new ranks and
  // takes rank 0's state.
  Status TrainElastic(int start_epoch, int epochs) {
    int64_t epoch = start_epoch, batch = 0;
    // Doubles travel as their bits: every rank ends with rank 0's exactly.
    int64_t lr_bits = 0, best_bits = 0, best_acc_bits = 0, wait = 0,
            cooldown = 0;
    auto to_bits = [](double d) {
      int64_t b;
      std::memcpy(&b, &d, sizeof(b));
      return b;
    };
    auto from_bits = [](int64_t b) {
      double d;
      std::memcpy(&d, &b, sizeof(d));
      return d;
    };
    auto pack = [&] {
      const auto p = plateau_.progress();
      lr_bits = to_bits(lr_);
      best_bits = to_bits(p.best);
      wait = p.wait;
      cooldown = p.cooldown_left;
      best_acc_bits = to_bits(best_val_accuracy_);
    };
    auto unpack = [&] {
      lr_ = from_bits(lr_bits);
      plateau_.set_progress({from_bits(best_bits), static_cast<int>(wait),
                             static_cast<int>(cooldown)});
      best_val_accuracy_ = from_bits(best_acc_bits);
    };
    hvd::elastic::TensorState state;
    for (auto& [name, buf] : StateBuffers(model_, opt_)) state.add(name, buf);
    for (auto [name, counter] :
         {std::pair{"epoch", &epoch}, std::pair{"batch", &batch},
          std::pair{"lr", &lr_bits}, std::pair{"plateau_best", &best_bits},
          std::pair{"plateau_wait", &wait},
          std::pair{"plateau_cooldown", &cooldown},
          std::pair{"best_val_accuracy", &best_acc_bits}}) {
      state.add_counter(name, counter);
    }
    state.register_reset_callback([&] {
      rank_ = hvd::rank();
      size_ = hvd::size();
      // The old pass's gradients died with the old membership.
      grads_ = std::make_unique<hvd::DistributedGradients>();
      Reshard();
      if (rank_ == 0) {
        std::printf("Reset: now %d ranks, from epoch %lld batch %lld\n", size_,
                    static_cast<long long>(epoch + 1),
                    static_cast<long long>(batch));
        if (!csv_) (void)OpenLogs(/*append=*/true);  // rank 0 is new
      }
    });
    pack();
    return hvd::elastic::run(state, [&](hvd::elastic::State& st) -> Status {
      unpack();  // rank 0's, after the sync
      for (; epoch < epochs; ++epoch, batch = 0) {
        const int e = static_cast<int>(epoch);
        if (rank_ == 0) std::printf("Epoch %d/%d\n", e + 1, epochs);
        Progress progress(steps_, rank_ == 0);
        auto commit_every = [&](int done) -> Status {
          batch = done;
          if (done % o_.batches_per_commit != 0) return Status::Ok();
          pack();
          return st.commit();
        };
        HVD_ASSIGN_OR_RETURN(Metrics m, TrainEpoch(e, static_cast<int>(batch),
                                                   progress, commit_every));
        HVD_RETURN_IF_ERROR(CheckRanksAgree(e));
        HVD_RETURN_IF_ERROR(EndEpochAdvanced(e, m, progress));
        ++epoch;
        batch = 0;
        pack();
        Status c = st.commit();
        --epoch;
        if (!c.ok()) {
          ++epoch;  // the commit holds the next epoch
          return c;
        }
      }
      return Status::Ok();
    });
  }

  // One epoch's steps from `first_step`; returns the training loss and
  // accuracy of this rank's batches. `after_step` (elastic) runs after each
  // step with the steps done; its error ends the epoch.
  StatusOr<Metrics> TrainEpoch(
      int epoch, int first_step, Progress& progress,
      const std::function<Status(int)>& after_step = nullptr) {
    if (basic_) {
      order_ = pool_;
      std::shuffle(order_.begin(), order_.end(), gen_);
      cursor_ = 0;
    }
    double loss_sum = 0;
    int64_t correct = 0, seen = 0;
    for (int step = first_step; step < steps_; ++step) {
      if (!basic_ && epoch < o_.warmup_epochs) {
        lr_ =
            WarmupLr(scaled_lr_, size_, o_.warmup_epochs, epoch, step, steps_);
      }
      // Basic ends each pass with the remainder, as Keras' fit does.
      const int n =
          basic_ ? std::min(o_.batch_size, train_.count - step * o_.batch_size)
                 : o_.batch_size;
      NextBatch(n);
      HVD_ASSIGN_OR_RETURN(BatchResult r,
                           model_.Forward(x_.data(), y_.data(), n, true));
      // Each gradient goes to libhvd as soon as it is final.
      Status added;
      HVD_RETURN_IF_ERROR(model_.Backward([&](int k) {
        Param& p = model_.params()[k];
        added.Update(grads_->add(p.name, p.grad.data(), p.grad.size()));
      }));
      HVD_RETURN_IF_ERROR(added);
      HVD_ASSIGN_OR_RETURN(bool stepped, grads_->end_pass());
      if (stepped) opt_.Apply(model_.params(), static_cast<float>(lr_));
      if (!broadcast_done_) {
        HVD_RETURN_IF_ERROR(BroadcastState(model_, opt_));
        broadcast_done_ = true;
      }
      loss_sum += r.loss * n;
      correct += r.correct;
      seen += n;
      progress.Update(step + 1, loss_sum / seen,
                      static_cast<double>(correct) / seen);
      if (after_step) HVD_RETURN_IF_ERROR(after_step(step + 1));
    }
    if (seen == 0) seen = 1;  // resumed at the epoch's end
    Metrics m;
    m.loss = loss_sum / seen;
    m.accuracy = static_cast<double>(correct) / seen;
    return m;
  }

  Status CheckRanksAgree(int epoch) {
    HVD_ASSIGN_OR_RETURN(bool agree, RanksAgree(model_, opt_, epoch));
    if (!agree && rank_ == 0) {
      std::fprintf(stderr,
                   "train_mnist: warning: after epoch %d the ranks' weights "
                   "or optimizer state differ; they should stay "
                   "identical (please report this)\n",
                   epoch + 1);
    }
    return Status::Ok();
  }

  Status SaveEpoch(int epoch, const Metrics& m) {
    std::string path =
        Join(o_.checkpoint_dir,
             "checkpoint-" + std::to_string(epoch + 1) + ".safetensors");
    return SaveCheckpoint(path, model_, opt_, epoch + 1, lr_, m, o_.mode,
                          scaling_);
  }

  // Basic: Keras' validation_data, the whole test set every epoch, here in
  // one contiguous share per rank, averaged; a checkpoint per epoch.
  Status EndEpochBasic(int epoch, Metrics m, Progress& progress) {
    const int first = static_cast<int>(int64_t{rank_} * test_.count / size_);
    const int last = static_cast<int>(int64_t{rank_ + 1} * test_.count / size_);
    HVD_ASSIGN_OR_RETURN(
        auto val, Evaluate(model_, test_, o_.batch_size, last - first, first));
    m.val_loss = val.first;
    m.val_accuracy = val.second;
    HVD_RETURN_IF_ERROR(AverageMetrics(&m, epoch));
    progress.Finish(Metric("loss", m.loss) + " - " +
                    Metric("accuracy", m.accuracy) + " - " +
                    Metric("val_loss", m.val_loss) + " - " +
                    Metric("val_accuracy", m.val_accuracy));
    return rank_ == 0 ? SaveEpoch(epoch, m) : Status::Ok();
  }

  // Advanced: validation on each rank's own stretch of the test set, then
  // the callbacks in Horovod's order: metric average, the warm-up's end,
  // ReduceLROnPlateau, CSV, TensorBoard, best-only checkpoint.
  Status EndEpochAdvanced(int epoch, Metrics m, Progress& progress) {
    HVD_ASSIGN_OR_RETURN(
        auto val,
        Evaluate(model_, test_, o_.batch_size, val_steps_ * o_.batch_size,
                 rank_ * val_steps_ * o_.batch_size));
    m.val_loss = val.first;
    m.val_accuracy = val.second;
    HVD_RETURN_IF_ERROR(AverageMetrics(&m, epoch));
    progress.Finish(
        Metric("loss", m.loss) + " - " + Metric("accuracy", m.accuracy) +
        " - " + Metric("val_loss", m.val_loss) + " - " +
        Metric("val_accuracy", m.val_accuracy) + " - " + Metric("lr", lr_));
    if (rank_ == 0 && epoch + 1 == o_.warmup_epochs) {
      std::printf("\nEpoch %d: finished gradual learning rate warmup to %g.\n",
                  epoch + 1, lr_);
    }
    const double epoch_lr = lr_;
    if (epoch + 1 >= o_.warmup_epochs) {
      const double next = plateau_.Update(m.val_loss, lr_);
      if (next != lr_ && rank_ == 0) {
        std::printf(
            "\nEpoch %d: ReduceLROnPlateau reducing learning rate to %g.\n",
            epoch + 1, next);
      }
      lr_ = next;
    }
    if (rank_ != 0) return Status::Ok();
    std::fprintf(csv_.get(), "%d,%.6f,%.6f,%.6f,%.6f,%.6g\n", epoch, m.loss,
                 m.accuracy, m.val_loss, m.val_accuracy, epoch_lr);
    std::fflush(csv_.get());
    if (tb_train_) HVD_RETURN_IF_ERROR(WriteTensorBoard(epoch, m, epoch_lr));
    if (m.val_accuracy > best_val_accuracy_) {
      best_val_accuracy_ = m.val_accuracy;
      HVD_RETURN_IF_ERROR(SaveEpoch(epoch, m));
    }
    return Status::Ok();
  }

  // Keras' TensorBoard callback: epoch scalars for both runs, and a
  // histogram of every weight.
  Status WriteTensorBoard(int epoch, const Metrics& m, double epoch_lr) {
    HVD_RETURN_IF_ERROR(tb_train_->Scalar("epoch_loss", epoch, m.loss));
    HVD_RETURN_IF_ERROR(tb_train_->Scalar("epoch_accuracy", epoch, m.accuracy));
    HVD_RETURN_IF_ERROR(
        tb_train_->Scalar("epoch_learning_rate", epoch, epoch_lr));
    for (const Param& p : model_.params()) {
      HVD_RETURN_IF_ERROR(tb_train_->Histogram(p.name, epoch, p.value));
    }
    HVD_RETURN_IF_ERROR(tb_val_->Scalar("epoch_loss", epoch, m.val_loss));
    return tb_val_->Scalar("epoch_accuracy", epoch, m.val_accuracy);
  }

  const TrainOptions o_;
  const bool basic_;
  int rank_, size_;  // an elastic job's change at a reset
  Images train_, test_;
  std::unique_ptr<Model> model_ptr_;
  Model& model_;
  Adadelta opt_;
  std::mt19937 gen_;
  InputScaling scaling_;
  std::unique_ptr<hvd::DistributedGradients> grads_;
  std::vector<float> x_;    // the batch's images
  std::vector<uint8_t> y_;  // and labels

  // The schedule, fixed by Run().
  int steps_ = 0, val_steps_ = 0;
  double scaled_lr_ = 0;

  // Training state.
  double lr_ = 0;
  std::vector<int> pool_;   // the images this rank trains on
  std::vector<int> order_;  // the current pass over pool_
  size_t cursor_ = 0;
  bool broadcast_done_ = false;
  ReduceLrOnPlateau plateau_{0.5, 10};
  double best_val_accuracy_ = -1;
  std::unique_ptr<std::FILE, CloseFile> csv_;
  std::unique_ptr<EventWriter> tb_train_, tb_val_;
};

}  // namespace

Status Train(const TrainOptions& o) {
  int threads = o.threads;
  if (threads == 0) {
    int cores = static_cast<int>(std::thread::hardware_concurrency());
    threads = std::max(1, cores / std::max(1, hvd::local_size()));
  }
  omp_set_num_threads(threads);
  HVD_ASSIGN_OR_RETURN(Images train, Load(o.data_dir, "train", o.train_limit));
  HVD_ASSIGN_OR_RETURN(Images test, Load(o.data_dir, "t10k", o.test_limit));
  if (train.count < o.batch_size * hvd::size() && o.mode == "advanced") {
    return Status::InvalidArgument(
        "--batch-size",
        "leaves no full batch per rank: " + std::to_string(train.count) +
            " training images for " + std::to_string(hvd::size()) + " ranks");
  }
  if (o.checkpoint_dir != "." && hvd::rank() == 0) {
    ::mkdir(o.checkpoint_dir.c_str(), 0755);
  }
  // The rank's GPU when one is visible (auto), else the CPU.
  int device = -1;
  const int gpus = VisibleGpus();
  if (o.device == "gpu" || (o.device == "auto" && gpus > 0)) {
    if (gpus == 0) {
      return Status::FailedPrecondition(
          "--device gpu",
          "no GPU is visible to this process (or this "
          "train_mnist was built without CUDA and cuDNN)");
    }
    device = (hvd::gpu() >= 0 ? hvd::gpu() : hvd::local_rank()) % gpus;
  }
  HVD_ASSIGN_OR_RETURN(
      std::unique_ptr<Model> model,
      Model::Create(o.seed + static_cast<uint64_t>(hvd::rank()), device));
  Trainer trainer(o, std::move(train), std::move(test), std::move(model));
  return trainer.Run();
}

}  // namespace hvd::mnist
