// Gradient averaging for training loops: named gradients allreduced
// through the engine (which fuses them), with local accumulation over
// `backward_passes_per_step` passes (the answer to a batch that does not
// fit: run it in pieces) and optional fp16 compression on the wire.
//
// Not thread-safe: one training loop owns it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/engine/engine.h"

namespace hvd::runtime {

enum class Compression { kNone, kFP16 };

struct GradientOptions {
  int backward_passes_per_step = 1;
  Compression compression = Compression::kNone;
  // As Horovod's average_aggregated_gradients: divide the sum of the
  // passes by their number (default: keep the sum).
  bool average_aggregated = false;
};

class GradientReducer {
 public:
  GradientReducer(Engine* engine, GradientOptions options);

  // Adds this pass's gradient `name` (count floats at `grad`). On the last
  // pass of a step, `grad` is where the averaged result is written, and
  // its allreduce starts at once: call Add as each gradient is ready (in
  // the backward pass) and the exchange overlaps the rest of the pass.
  // `grad` must then stay untouched until EndPass.
  Status Add(const std::string& name, float* grad, size_t count);

  // Ends a backward pass. True when this pass completed a step: every
  // gradient given in it now holds the average over ranks (of the sum, or
  // average, of the passes); false when the pass was only accumulated.
  StatusOr<bool> EndPass();

 private:
  struct Slot {
    std::vector<float> sum;
    float* out = nullptr;
    std::vector<uint16_t> wire;        // fp16 copy while in flight
    std::shared_ptr<Completion> done;  // submitted this step
    bool in_place = false;             // allreduced in `out` itself
    size_t count = 0;
  };
  // Starts the slot's allreduce.
  void Submit(const std::string& name, Slot& slot);
  Engine* engine_;
  GradientOptions options_;
  int passes_ = 0;
  std::map<std::string, Slot> slots_;
};

}  // namespace hvd::runtime
