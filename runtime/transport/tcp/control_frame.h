// The TCP control plane's frames: what one rank tells a peer in one step
// of an exchange. Pure.
//
//   [u32 length][u8 kind][body]      length counts the kind and the body
//   kind 0, parts: [u32 m][m x (u8 merged, u32+ message)]
//                  [u32 r][r x (u32 first rank, u32 ranks, u32 message)]
//   kind 1, abort: the reason this rank's plane failed, as text
//   kind 2, start: nothing; the exchange has begun at the sender, which
//                  waits on the receiver before it sends it anything else
//   kind 3, own:   the sender's own message, alone (a mesh's frames, a
//                  doubling's first): sent from where it lies, received
//                  into place, no copy either way
//
// A parts frame carries the messages of a set of ranks (one rank's own in
// a mesh, a whole block of ranks in a doubling round), each distinct
// message once and the ranks as runs: where the ranks' messages agree (a
// cycle of cached tensors only), a frame's size does not grow with the
// ranks it speaks for. A merged message stands for a group of ranks whose
// messages were merged into one on the way (ControlPlane::Merger); its
// ranks are the group, the lowest its leader. u32+ is a byte string after
// its 32-bit length; little-endian hosts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hvd::runtime {

enum class FrameKind : uint8_t { kParts = 0, kAbort = 1, kStart = 2, kOwn = 3 };

// Bytes before a frame's body: its length and its kind.
inline constexpr size_t kFrameHead = 5;

// What a rank knows of an exchange so far, by rank: whether it has that
// rank's message, the message, and the rank's group (the lowest rank of
// the ranks whose messages merged with it, itself where none did). A
// group's message is its leader's entry; its other ranks' are empty.
struct Parts {
  std::vector<bool> known;
  std::vector<std::string> all;
  std::vector<int> group;
  // Ranks learned by the last ReadPartsFrame, ascending.
  std::vector<int> learned;
  bool merged = false;  // some group has more than one rank

  void Reset(int size);  // nothing known, every rank its own group
};

// Appends the parts frame of the ranks `p` knows.
void PutPartsFrame(const Parts& p, std::string* out);

// Appends an abort frame.
void PutAbortFrame(std::string_view reason, std::string* out);

// Appends a start frame.
void PutStartFrame(std::string* out);

// Appends the head of an own frame whose message of `bytes` follows.
void PutOwnFrameHead(size_t bytes, std::string* out);

// Reads a parts frame's body (after the kind) into `p`, listing the ranks
// in p->learned. False when it is malformed or names a rank outside
// p->all.
bool ReadPartsFrame(std::string_view body, Parts* p);

}  // namespace hvd::runtime
