// Keras ImageDataGenerator's augmentation of the advanced example, on 28x28
// grey images: a random rotation within +-rotation degrees, shifts within
// +-shift of the width and height, and a zoom in [1 - zoom, 1 + zoom] per
// axis, sampled bilinearly (Keras' order 1) with "nearest" filling outside.
#pragma once

#include <cstdint>
#include <random>

namespace hvd::mnist {

struct AugmentOptions {
  double rotation_degrees = 10;
  double shift = 0.1;
  double zoom = 0.1;
};

// in, out: 28 x 28 floats (may not alias).
void Augment(const float* in, float* out, const AugmentOptions& options,
             std::mt19937& gen);

}  // namespace hvd::mnist
