// The element-wise loops of the model's step that are ours rather than
// oneDNN's or cuDNN's: dropout masks, gradients through ReLU and dropout,
// and the Adadelta update. Each is built for several instruction sets
// (kernels.cc); without errno the optimizer's square roots
// vectorise too.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hvd::mnist {

// Inverted dropout: out[i] = in[i] * mask[i], with mask[i] either 0 (with
// probability `rate`) or 1 / (1 - rate). The mask is a counter-based hash
// of (key, i), so the loop vectorises and a key reproduces the same mask.
void Dropout(const float* in, float* out, float* mask, size_t n, float rate,
             uint64_t key);

// diff[i] = act[i] > 0 ? diff[i] * mask[i] : 0 (mask may be null: 1), the
// gradient through ReLU (and a dropout mask) in place.
void ReluBackward(float* diff, const float* mask, const float* act, size_t n);

// Keras' Adadelta on n parameters (see adadelta.h for the formula).
void AdadeltaUpdate(float* w, const float* g, float* accum_grad,
                    float* accum_var, size_t n, float lr, float rho, float eps);

}  // namespace hvd::mnist
