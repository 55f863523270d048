// Whole-file reads, and secrets that must not be readable by others.
#pragma once

#include <string>

#include "common/status.h"

namespace hvd {

// Reads a whole file; NotFound naming it when it cannot be read.
StatusOr<std::string> ReadWholeFile(const std::string& path);

// Reads a secret (a token, a private key): the file must be a regular file
// that group and others can neither read nor write, as ssh demands of keys;
// surrounding white space is dropped. `what` names the setting ("--tls-key").
StatusOr<std::string> ReadSecretFile(const std::string& path,
                                     const std::string& what);

}  // namespace hvd
