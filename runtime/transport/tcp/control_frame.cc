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

void Parts::Reset(int size) {
  const size_t n = static_cast<size_t>(size);
  known.assign(n, false);
  all.resize(n);
  group.resize(n);
  for (int r = 0; r < size; ++r) group[r] = r;
  learned.clear();
  merged = false;
}

void PutPartsFrame(const Parts& p, std::string* out) {
  const std::vector<std::string>& all = p.all;
  // Entries: a rank whose message is sent, and whether it leads a group.
  struct Entry {
    uint32_t rank;
    bool merged;
  };
  std::vector<Entry> distinct;
  std::vector<Run> runs;
  std::vector<int32_t> entry_of;  // a group leader's entry
  if (p.merged) entry_of.assign(all.size(), -1);
  for (uint32_t r = 0; r < all.size(); ++r) {
    if (!p.known[r]) continue;
    uint32_t m = static_cast<uint32_t>(distinct.size());
    const int leader = p.group[r];
    if (leader != static_cast<int>(r)) {
      m = static_cast<uint32_t>(entry_of[leader]);  // known before r
      distinct[m].merged = true;
    } else if (p.merged) {
      // A rank's entry may turn out a group's (its ranks follow it): none
      // is shared by equal messages while groups are about.
      distinct.push_back({r, false});
      entry_of[r] = static_cast<int32_t>(m);
    } else {
      const size_t low =
          distinct.size() > kDedupWindow ? distinct.size() - kDedupWindow : 0;
      for (size_t i = distinct.size(); i > low; --i) {
        if (all[distinct[i - 1].rank] == all[r]) {
          m = static_cast<uint32_t>(i - 1);
          break;
        }
      }
      if (m == distinct.size()) distinct.push_back({r, false});
    }
    if (!runs.empty() && runs.back().first + runs.back().ranks == r &&
        runs.back().message == m) {
      ++runs.back().ranks;
    } else {
      runs.push_back({r, 1, m});
    }
  }
  const size_t start = out->size();
  PutU32(out, 0);
  out->push_back(static_cast<char>(FrameKind::kParts));
  PutU32(out, static_cast<uint32_t>(distinct.size()));
  for (const Entry& e : distinct) {
    out->push_back(e.merged ? 1 : 0);
    PutU32(out, static_cast<uint32_t>(all[e.rank].size()));
    out->append(all[e.rank]);
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

void PutOwnFrameHead(size_t bytes, std::string* out) {
  PutU32(out, static_cast<uint32_t>(bytes + 1));
  out->push_back(static_cast<char>(FrameKind::kOwn));
}

bool ReadPartsFrame(std::string_view body, Parts* p) {
  uint32_t m;
  if (!TakeU32(&body, &m) || m > body.size() / 5) return false;
  struct Entry {
    std::string_view bytes;
    bool merged;
    int leader = -1;  // a merged entry's first rank
  };
  std::vector<Entry> entries(m);
  for (Entry& e : entries) {
    uint32_t len;
    if (body.empty() || static_cast<uint8_t>(body[0]) > 1) return false;
    e.merged = body[0] == 1;
    body.remove_prefix(1);
    if (!TakeU32(&body, &len) || len > body.size()) return false;
    e.bytes = body.substr(0, len);
    body.remove_prefix(len);
  }
  uint32_t runs;
  if (!TakeU32(&body, &runs) || runs > body.size() / 12) return false;
  const size_t n = p->all.size();
  p->learned.clear();
  for (uint32_t i = 0; i < runs; ++i) {
    Run run;
    if (!TakeU32(&body, &run.first) || !TakeU32(&body, &run.ranks) ||
        !TakeU32(&body, &run.message) || run.message >= m || run.first > n ||
        run.ranks > n - run.first ||
        (!p->learned.empty() &&
         run.first <= static_cast<uint32_t>(p->learned.back()))) {
      return false;
    }
    Entry& e = entries[run.message];
    for (uint32_t r = run.first; r < run.first + run.ranks; ++r) {
      if (!e.merged) {
        p->all[r].assign(e.bytes);
        p->group[r] = static_cast<int>(r);
      } else if (e.leader < 0) {
        e.leader = static_cast<int>(r);
        p->all[r].assign(e.bytes);
        p->group[r] = e.leader;
        p->merged = true;
      } else {
        p->all[r].clear();
        p->group[r] = e.leader;
      }
      p->known[r] = true;
      p->learned.push_back(static_cast<int>(r));
    }
  }
  return body.empty();
}

}  // namespace hvd::runtime
