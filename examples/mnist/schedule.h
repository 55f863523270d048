// The learning-rate callbacks of the advanced example, as pure logic.
#pragma once

#include <cmath>
#include <limits>

namespace hvd::mnist {

// Horovod's LearningRateWarmupCallback: with e = epoch + (batch + 1) /
// steps_per_epoch, lr = initial_lr / size * (e * (size - 1) / warmup + 1),
// from initial_lr / size up to initial_lr at the end of the warm-up.
inline double WarmupLr(double initial_lr, int size, int warmup_epochs,
                       int epoch, int batch, int steps_per_epoch) {
  double e = epoch + static_cast<double>(batch + 1) / steps_per_epoch;
  return initial_lr / size * (e * (size - 1) / warmup_epochs + 1);
}

// Keras' ReduceLROnPlateau in "min" mode (val_loss): after `patience`
// epochs without an improvement of more than min_delta, lr *= factor (not
// below min_lr), then `cooldown` epochs of rest.
class ReduceLrOnPlateau {
 public:
  ReduceLrOnPlateau(double factor = 0.5, int patience = 10,
                    double min_delta = 1e-4, int cooldown = 0,
                    double min_lr = 0)
      : factor_(factor),
        patience_(patience),
        min_delta_(min_delta),
        cooldown_(cooldown),
        min_lr_(min_lr) {}

  // What it has learnt so far, for an elastic job to keep alike on every
  // rank (a worker that joins later starts from rank 0's).
  struct Progress {
    double best;
    int wait, cooldown_left;
  };
  Progress progress() const { return {best_, wait_, cooldown_left_}; }
  void set_progress(const Progress& p) {
    best_ = p.best;
    wait_ = p.wait;
    cooldown_left_ = p.cooldown_left;
  }

  // The lr for the next epoch, given this epoch's monitored value.
  double Update(double value, double lr) {
    if (cooldown_left_ > 0) {
      --cooldown_left_;
      wait_ = 0;
    }
    if (value < best_ - min_delta_) {
      best_ = value;
      wait_ = 0;
      return lr;
    }
    if (cooldown_left_ == 0 && ++wait_ >= patience_) {
      wait_ = 0;
      cooldown_left_ = cooldown_;
      return std::max(lr * factor_, min_lr_);
    }
    return lr;
  }

 private:
  double factor_;
  int patience_;
  double min_delta_;
  int cooldown_;
  double min_lr_;
  double best_ = std::numeric_limits<double>::infinity();
  int wait_ = 0;
  int cooldown_left_ = 0;
};

}  // namespace hvd::mnist
