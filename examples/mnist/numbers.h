// Strict numbers for train_mnist's flags and checkpoint metadata: the whole
// text must be the number, in range, or the error names what to fix. The
// example keeps its own, since it uses libhvd's public API alone.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "hvd/status.h"

namespace hvd::mnist {

// `T` is int64_t or double; `what` names the flag or field.
template <typename T>
StatusOr<T> ParseNumber(std::string_view text, const std::string& what, T min,
                        T max) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != end ||
      (std::is_floating_point_v<T> && !std::isfinite(double(value)))) {
    return Status::InvalidArgument(
        what, "expected a number, got '" + std::string(text) + "'");
  }
  if (ec == std::errc::result_out_of_range || value < min || value > max) {
    return Status::InvalidArgument(
        what, "must be between " + std::to_string(min) + " and " +
                  std::to_string(max) + " (got " + std::string(text) + ")");
  }
  return value;
}

}  // namespace hvd::mnist
