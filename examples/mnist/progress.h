// Keras' per-epoch progress line on rank 0: "12/31 [=====>........] -
// ETA: 3s - loss: 0.4120 - accuracy: 0.8750", redrawn in place on a
// terminal, printed as plain lines every tenth of the epoch otherwise (a
// log file or horovodrun's pipe), and closed with the epoch's summary.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace hvd::mnist {

class Progress {
 public:
  Progress(int steps, bool enabled, FILE* out = stdout);
  // After step `done` (1-based) with the running metrics.
  void Update(int done, double loss, double accuracy);
  // The final line: total time, time per step and `metrics` ("loss: ..").
  void Finish(const std::string& metrics);

 private:
  std::string Bar(int done) const;

  int steps_;
  bool enabled_, tty_;
  FILE* out_;
  int last_printed_ = 0;
  std::chrono::steady_clock::time_point start_;
};

// "1.2345" with 4 decimals, as Keras prints metrics.
std::string Metric(const char* name, double v);

}  // namespace hvd::mnist
