#include "runtime/engine/eager_merge.h"

#include <cstring>

#include "common/copy_bytes.h"
#include "common/equal_bytes.h"
#include "runtime/engine/message.h"

namespace hvd::runtime {
namespace {

// The one cached id a message's bits name, if exactly one.
bool OneBit(std::string_view bits, uint32_t* id) {
  bool found = false;
  for (size_t i = 0; i < bits.size(); ++i) {
    const auto byte = static_cast<uint8_t>(bits[i]);
    if (byte == 0) continue;
    if (found || (byte & (byte - 1)) != 0) return false;
    *id = static_cast<uint32_t>(i * 8 + __builtin_ctz(byte));
    found = true;
  }
  return found;
}

// Engine::Encode's form of no requests: [u8 stop][u32 0].
bool NoRequests(std::string_view encoded) {
  uint32_t n = 1;
  if (encoded.size() != 1 + sizeof(n)) return false;
  std::memcpy(&n, encoded.data() + 1, sizeof(n));
  return n == 0;
}

}  // namespace

bool EagerMerger::Merge(std::string_view low, std::string_view high,
                        std::string* out) {
  if (low.size() != high.size()) return false;
  CycleMessage m;
  uint32_t id;
  if (!ParseCycleMessage(low, &m) || m.stop != 0 || m.knobs ||
      m.eager.size() != 1 || !NoRequests(m.requests) || !OneBit(m.bits, &id) ||
      !cache_.Has(id)) {
    return false;
  }
  const Request& r = cache_.Get(id);
  const std::string_view data = m.eager[0].second;
  const size_t bytes = static_cast<size_t>(r.count) * DataTypeSize(r.dtype);
  if (r.type != OpType::kAllreduce || r.adasum || r.device >= 0 ||
      r.prescale != 1.0 || r.name != m.eager[0].first || data.size() != bytes) {
    return false;
  }
  // The same but for the data.
  const size_t at = static_cast<size_t>(data.data() - low.data());
  const size_t tail = at + bytes;
  if (!EqualBytes(low.data(), high.data(), at) ||
      low.substr(tail) != high.substr(tail)) {
    return false;
  }
  const size_t words = (bytes + 7) / 8;
  a_.resize(words);
  b_.resize(words);
  if (bytes > 0) {
    CopyBytes(a_.data(), low.data() + at, bytes);
    CopyBytes(b_.data(), high.data() + at, bytes);
    ReduceBuffers(r.dtype, r.reduce, a_.data(), a_.data(), b_.data(),
                  static_cast<size_t>(r.count));
  }
  out->assign(low);
  if (bytes > 0) CopyBytes(out->data() + at, a_.data(), bytes);
  return true;
}

}  // namespace hvd::runtime
