#include "mnist/augment.h"

#include <algorithm>
#include <cmath>

#include "mnist/model.h"

namespace hvd::mnist {

void Augment(const float* in, float* out, const AugmentOptions& o,
             std::mt19937& gen) {
  constexpr int n = kImageSide;
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const double theta = u(gen) * o.rotation_degrees * M_PI / 180.0;
  const double tx = u(gen) * o.shift * n, ty = u(gen) * o.shift * n;
  const double zx = 1 + u(gen) * o.zoom, zy = 1 + u(gen) * o.zoom;
  const double c = std::cos(theta), s = std::sin(theta);
  const double centre = (n - 1) / 2.0;
  // Output pixel -> input pixel: rotate and zoom about the centre, then
  // shift (the inverse mapping, as Keras' apply_affine_transform).
  for (int y = 0; y < n; ++y) {
    for (int x = 0; x < n; ++x) {
      double dx = x - centre, dy = y - centre;
      double sx = (c * dx - s * dy) * zx + centre + tx;
      double sy = (s * dx + c * dy) * zy + centre + ty;
      // Bilinear, with "nearest" filling: coordinates clamp to the edge.
      sx = std::clamp(sx, 0.0, n - 1.0);
      sy = std::clamp(sy, 0.0, n - 1.0);
      int x0 = static_cast<int>(sx), y0 = static_cast<int>(sy);
      int x1 = std::min(x0 + 1, n - 1), y1 = std::min(y0 + 1, n - 1);
      float fx = static_cast<float>(sx - x0), fy = static_cast<float>(sy - y0);
      float top = in[y0 * n + x0] * (1 - fx) + in[y0 * n + x1] * fx;
      float bottom = in[y1 * n + x0] * (1 - fx) + in[y1 * n + x1] * fx;
      out[y * n + x] = top * (1 - fy) + bottom * fy;
    }
  }
}

}  // namespace hvd::mnist
