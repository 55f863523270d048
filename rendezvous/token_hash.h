// Job tokens are kept, in memory and in a store, only as their SHA-256:
// a state file or a snapshot that leaks gives no one a job's token. The
// tokens are 256 random bits, so a plain hash is as strong as a slow one.
#pragma once

#include <string>

namespace hvd::rendezvous {

// Lower-case hex of SHA-256(token).
std::string HashToken(const std::string& token);

}  // namespace hvd::rendezvous
