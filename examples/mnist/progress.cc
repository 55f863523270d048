#include "mnist/progress.h"

#include <unistd.h>

#include <algorithm>

namespace hvd::mnist {

Progress::Progress(int steps, bool enabled, FILE* out)
    : steps_(steps),
      enabled_(enabled),
      tty_(enabled && ::isatty(::fileno(out))),
      out_(out),
      start_(std::chrono::steady_clock::now()) {}

std::string Progress::Bar(int done) const {
  constexpr int kWidth = 30;
  int filled = steps_ > 0 ? kWidth * done / steps_ : kWidth;
  std::string bar = "[";
  for (int i = 0; i < kWidth; ++i) {
    bar += i < filled - 1 || (i == filled - 1 && done == steps_) ? '='
           : i == filled - 1                                     ? '>'
                                                                 : '.';
  }
  return bar + "]";
}

std::string Metric(const char* name, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s: %.4f", name, v);
  return buf;
}

void Progress::Update(int done, double loss, double accuracy) {
  if (!enabled_) return;
  // Off a terminal, a line per tenth of the epoch is plenty.
  if (!tty_ && done * 10 / steps_ == last_printed_ * 10 / steps_ && done != 1) {
    return;
  }
  if (done == steps_) return;  // Finish prints the last one
  last_printed_ = done;
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
          .count();
  double eta = elapsed / done * (steps_ - done);
  std::fprintf(out_, "%s%d/%d %s - ETA: %.0fs - %s - %s%s", tty_ ? "\r" : "",
               done, steps_, Bar(done).c_str(), eta,
               Metric("loss", loss).c_str(),
               Metric("accuracy", accuracy).c_str(), tty_ ? "" : "\n");
  std::fflush(out_);
}

void Progress::Finish(const std::string& metrics) {
  if (!enabled_) return;
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
          .count();
  std::fprintf(out_, "%s%d/%d %s - %.0fs %.0fms/step - %s\n", tty_ ? "\r" : "",
               steps_, steps_, Bar(steps_).c_str(), elapsed,
               elapsed * 1000 / std::max(steps_, 1), metrics.c_str());
  std::fflush(out_);
}

}  // namespace hvd::mnist
