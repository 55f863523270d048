// The digits in memory, and how their pixels become the network's inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hvd/status.h"
#include "mnist/model.h"

namespace hvd::mnist {

inline constexpr int kPixels = kImageSide * kImageSide;

struct Images {
  int count = 0;
  std::vector<float> pixels;  // count x 784 in [0, 1]
  std::vector<uint8_t> labels;
};

// The IDX pair `prefix` in `dir`, its first `limit` images (all when 0).
StatusOr<Images> Load(const std::string& dir, const std::string& prefix,
                      int limit);

// How pixels in [0, 1] become the network's inputs: (x - mean) / std.
struct InputScaling {
  double mean = 0, std = 1;  // 0 and 1: Keras' examples' plain x / 255
};

// The pixel mean and standard deviation of `images`, for standardising
// (every rank computes the same values from the same data).
InputScaling Measure(const Images& images);
void Apply(const InputScaling& s, Images& images);

}  // namespace hvd::mnist
