// The engine's wire formats: a list of requests (Engine::Encode/Decode),
// and one rank's message of a cycle:
//   [u8 stop][u32+ cache bits][u32+ requests][u32 n][n x (u32+ name, u32+
//   data)] [u8 has knobs][u64 fusion bytes][i64 cycle us][u8 flags: cache
//   1, hier. allreduce 2, hier. allgather 4, shared memory 8, single copy
//   16, several TCP streams 32]
// where u32+ is a byte string after its 32-bit length. Little-endian hosts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/autotune.h"
#include "runtime/engine/request.h"

namespace hvd::runtime {

template <typename T>
void PutValue(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(v));
}
// [u32 length][bytes].
void PutBytes(std::string& out, std::string_view bytes);
// [u8 stop][u32 n][n requests]: Engine::Encode's format, from pointers
// (the engine's pending requests are not copied to be sent).
void PutRequests(std::string& out, uint8_t stop,
                 const std::vector<const Request*>& reqs);
// A cycle's message up to its small tensors: [u8 stop][u32+ bits][u32+
// requests]. BuildMessage and the fast lane both write it here, so their
// bytes agree (express cycles compare them).
void PutMessageHead(std::string& out, uint8_t stop, std::string_view bits,
                    const std::vector<const Request*>& uncached);
// One small tensor's (u32+ name, u32+ data); returns where the data starts.
size_t PutEager(std::string& out, std::string_view name, std::string_view data);
// The message's last part: rank 0's autotuned values, if any.
void PutKnobs(std::string& out, const std::optional<Knobs>& knobs);

struct CycleMessage {
  uint8_t stop = 0;
  std::string_view bits;  // bit id set: this rank has that cached tensor
  std::string requests;   // Engine::Encode's format
  // Small tensors' data: (name, bytes), views into the parsed message.
  std::vector<std::pair<std::string_view, std::string_view>> eager;
  std::optional<Knobs> knobs;
};

// False when `in` is not a whole, well-formed message.
bool ParseCycleMessage(std::string_view in, CycleMessage* m);

inline bool Bit(std::string_view bits, uint32_t id) {
  return id / 8 < bits.size() && ((bits[id / 8] >> (id % 8)) & 1);
}

}  // namespace hvd::runtime
