#include "runtime/transport/tcp/control_frame.h"

#include <cstring>

namespace hvd::runtime {
namespace {

// A message equal to one of the last few distinct ones is sent once: the
// ranks of a cycle mostly agree, and a bounded search keeps a frame of
// all-different messages (small tensors' data) linear.
constexpr size_t kDedupWindow = 8;

void PutU32(std::string* out, uint32_t v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

bool TakeU32(std::string_view* in, uint32_t* v) {
  if (in->size() < sizeof(*v)) return false;
  std::memcpy(v, in->data(), sizeof(*v));
  in->remove_prefix(sizeof(*v));
  return true;
}

struct Run {
  uint32_t first, ranks, message;
};

// The frame's length, now that its end is known.
void CloseFrame(std::string* out, size_t start) {
  const uint32_t len = static_cast<uint32_t>(out->size() - start - 4);
  std::memcpy(out->data() + start, &len, sizeof(len));
}

}  // namespace

void PutPartsFrame(const std::vector<std::string>& all,
                   const std::vector<bool>& known, std::string* out) {
  std::vector<uint32_t> distinct;  // ranks whose message is sent
  std::vector<Run> runs;
  for (uint32_t r = 0; r < all.size(); ++r) {
    if (!known[r]) continue;
    if (!runs.empty() && runs.back().first + runs.back().ranks == r &&
        all[distinct[runs.back().message]] == all[r]) {
      ++runs.back().ranks;
      continue;
    }
    uint32_t m = static_cast<uint32_t>(distinct.size());
    const size_t low =
        distinct.size() > kDedupWindow ? distinct.size() - kDedupWindow : 0;
    for (size_t i = distinct.size(); i > low; --i) {
      if (all[distinct[i - 1]] == all[r]) {
        m = static_cast<uint32_t>(i - 1);
        break;
      }
    }
    if (m == distinct.size()) distinct.push_back(r);
    runs.push_back({r, 1, m});
  }
  const size_t start = out->size();
  PutU32(out, 0);
  out->push_back(static_cast<char>(FrameKind::kParts));
  PutU32(out, static_cast<uint32_t>(distinct.size()));
  for (uint32_t r : distinct) {
    PutU32(out, static_cast<uint32_t>(all[r].size()));
    out->append(all[r]);
  }
  PutU32(out, static_cast<uint32_t>(runs.size()));
  for (const Run& run : runs) {
    PutU32(out, run.first);
    PutU32(out, run.ranks);
    PutU32(out, run.message);
  }
  CloseFrame(out, start);
}

void PutAbortFrame(std::string_view reason, std::string* out) {
  const size_t start = out->size();
  PutU32(out, 0);
  out->push_back(static_cast<char>(FrameKind::kAbort));
  out->append(reason);
  CloseFrame(out, start);
}

void PutStartFrame(std::string* out) {
  const size_t start = out->size();
  PutU32(out, 0);
  out->push_back(static_cast<char>(FrameKind::kStart));
  CloseFrame(out, start);
}

bool ReadPartsFrame(std::string_view body, std::vector<std::string>* all,
                    std::vector<bool>* known) {
  uint32_t m;
  if (!TakeU32(&body, &m) || m > body.size() / 4) return false;
  std::vector<std::string_view> messages(m);
  for (std::string_view& v : messages) {
    uint32_t len;
    if (!TakeU32(&body, &len) || len > body.size()) return false;
    v = body.substr(0, len);
    body.remove_prefix(len);
  }
  uint32_t runs;
  if (!TakeU32(&body, &runs) || runs > body.size() / 12) return false;
  for (uint32_t i = 0; i < runs; ++i) {
    Run run;
    if (!TakeU32(&body, &run.first) || !TakeU32(&body, &run.ranks) ||
        !TakeU32(&body, &run.message) || run.message >= m ||
        run.first > all->size() || run.ranks > all->size() - run.first) {
      return false;
    }
    for (uint32_t r = run.first; r < run.first + run.ranks; ++r) {
      (*all)[r].assign(messages[run.message]);
      (*known)[r] = true;
    }
  }
  return body.empty();
}

}  // namespace hvd::runtime
