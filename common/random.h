// Secrets and identifiers from the kernel's CSPRNG.
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"

namespace hvd {

// `bytes` random bytes from getrandom(2), hex-encoded (2 chars per byte).
StatusOr<std::string> RandomHex(size_t bytes);

// Compares in time that depends only on the lengths, so a token cannot be
// guessed one byte at a time by timing the answers.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

}  // namespace hvd
