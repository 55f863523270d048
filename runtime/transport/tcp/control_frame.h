// The TCP control plane's frames: what one rank tells a peer in one step
// of an exchange. Pure.
//
//   [u32 length][u8 kind][body]      length counts the kind and the body
//   kind 0, parts: [u32 m][m x u32+ message]
//                  [u32 r][r x (u32 first rank, u32 ranks, u32 message)]
//   kind 1, abort: the reason this rank's plane failed, as text
//   kind 2, start: nothing; the exchange has begun at the sender, which
//                  waits on the receiver before it sends it anything else
//
// A parts frame carries the messages of a set of ranks (one rank's own in
// a mesh, a whole block of ranks in a doubling round), each distinct
// message once and the ranks as runs: where the ranks' messages agree (a
// cycle of cached tensors only), a frame's size does not grow with the
// ranks it speaks for. u32+ is a byte string after its 32-bit length;
// little-endian hosts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hvd::runtime {

enum class FrameKind : uint8_t { kParts = 0, kAbort = 1, kStart = 2 };

// Bytes before a frame's body: its length and its kind.
inline constexpr size_t kFrameHead = 5;

// Appends the parts frame of the ranks `known` marks, their messages from
// `all` (index = rank).
void PutPartsFrame(const std::vector<std::string>& all,
                   const std::vector<bool>& known, std::string* out);

// Appends an abort frame.
void PutAbortFrame(std::string_view reason, std::string* out);

// Appends a start frame.
void PutStartFrame(std::string* out);

// Reads a parts frame's body (after the kind) into all[r], marking
// known[r]. False when it is malformed or names a rank outside `all`.
bool ReadPartsFrame(std::string_view body, std::vector<std::string>* all,
                    std::vector<bool>* known);

}  // namespace hvd::runtime
