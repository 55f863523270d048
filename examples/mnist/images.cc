#include "mnist/images.h"

#include <algorithm>
#include <cmath>

#include "mnist/idx.h"

namespace hvd::mnist {

StatusOr<Images> Load(const std::string& dir, const std::string& prefix,
                      int limit) {
  HVD_ASSIGN_OR_RETURN(Dataset d, ReadIdxPair(dir, prefix));
  Images out;
  out.count = limit > 0 ? std::min(limit, d.count) : d.count;
  out.pixels.resize(static_cast<size_t>(out.count) * kPixels);
  for (size_t i = 0; i < out.pixels.size(); ++i) {
    out.pixels[i] = d.pixels[i] / 255.0f;
  }
  out.labels.assign(d.labels.begin(), d.labels.begin() + out.count);
  return out;
}

InputScaling Measure(const Images& images) {
  double sum = 0, squares = 0;
  for (float v : images.pixels) sum += v;
  const double n = std::max<double>(1, images.pixels.size());
  const double mean = sum / n;
  for (float v : images.pixels) squares += (v - mean) * (v - mean);
  const double std = std::sqrt(squares / n);
  return {mean, std > 1e-6 ? std : 1.0};
}

void Apply(const InputScaling& s, Images& images) {
  if (s.mean == 0 && s.std == 1) return;
  const auto mean = static_cast<float>(s.mean), std = static_cast<float>(s.std);
  for (float& v : images.pixels) v = (v - mean) / std;
}

}  // namespace hvd::mnist
