#include "runtime/transport/hierarchical/host_messages.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace hvd::runtime {
namespace {

void PutU32(uint32_t v, std::string* out) {
  char b[4];
  std::memcpy(b, &v, 4);
  out->append(b, 4);
}

// Reads a u32 length and that many bytes at *at; false past the end.
bool TakeBlock(std::string_view in, size_t* at, std::string_view* block) {
  if (in.size() - *at < 4) return false;
  uint32_t len;
  std::memcpy(&len, in.data() + *at, 4);
  *at += 4;
  if (in.size() - *at < len) return false;
  *block = in.substr(*at, len);
  *at += len;
  return true;
}

Status Malformed(const std::string& what) {
  return Status::DataLoss("control plane", "malformed " + what);
}

}  // namespace

void PackBlocks(const std::vector<std::string>& blocks, std::string* out) {
  for (const std::string& b : blocks) {
    PutU32(static_cast<uint32_t>(b.size()), out);
    out->append(b);
  }
}

bool UnpackBlocks(std::string_view in, std::vector<std::string>* blocks) {
  blocks->clear();
  for (size_t at = 0; at < in.size();) {
    std::string_view b;
    if (!TakeBlock(in, &at, &b)) return false;
    blocks->emplace_back(b);
  }
  return true;
}

void PackHostMessage(const std::vector<std::string>& local,
                     ControlPlane::Merger* merger, std::string* out) {
  out->clear();
  if (local.size() == 1) {
    out->push_back('M');
    out->append(local[0]);
    return;
  }
  if (merger != nullptr && !local.empty()) {
    std::string acc = local[0], next;
    size_t i = 1;
    for (; i < local.size() && merger->Merge(acc, local[i], &next); ++i) {
      acc.swap(next);
    }
    if (i == local.size()) {
      out->push_back('M');
      out->append(acc);
      return;
    }
  }
  out->push_back('L');
  PackBlocks(local, out);
}

std::string HostErrorMessage(std::string_view why) {
  return "E" + std::string(why);
}

bool HostMerger::Merge(std::string_view low, std::string_view high,
                       std::string* out) {
  if (engine_ == nullptr || low.empty() || high.empty() || low[0] != 'M' ||
      high[0] != 'M') {
    return false;
  }
  if (!engine_->Merge(low.substr(1), high.substr(1), &merged_)) return false;
  out->assign(1, 'M');
  out->append(merged_);
  return true;
}

void PackHandOut(const std::vector<std::string>& hosts,
                 const std::vector<int>* groups, std::string* out) {
  out->assign(1, 'R');
  out->push_back(groups != nullptr ? 1 : 0);
  if (groups != nullptr) {
    for (int g : *groups) PutU32(static_cast<uint32_t>(g), out);
  }
  PackBlocks(hosts, out);
}

std::string HandOutError(std::string_view why) {
  return "E" + std::string(why);
}

Status UnpackHandOut(std::string_view in,
                     const std::vector<std::vector<int>>& host_ranks,
                     std::vector<std::string>* all, std::vector<int>* groups,
                     bool* merged) {
  if (in.empty()) return Malformed("hand-out (empty)");
  if (in[0] == 'E') return Status::Unavailable("control plane", in.substr(1));
  const size_t hosts = host_ranks.size();
  if (in[0] != 'R' || in.size() < 2) return Malformed("hand-out");
  const bool cross_merged = in[1] != 0;
  size_t at = 2;
  // Each host's first rank, and each cross group's lowest rank.
  std::vector<int> first(hosts), low(hosts), cross(hosts);
  for (size_t h = 0; h < hosts; ++h) {
    first[h] = *std::min_element(host_ranks[h].begin(), host_ranks[h].end());
    low[h] = first[h];
    cross[h] = static_cast<int>(h);
  }
  if (cross_merged) {
    if (in.size() - at < 4 * hosts) return Malformed("hand-out groups");
    for (size_t h = 0; h < hosts; ++h) {
      uint32_t g;
      std::memcpy(&g, in.data() + at + 4 * h, 4);
      if (g > h) return Malformed("hand-out group");
      cross[h] = static_cast<int>(g);
      low[g] = std::min(low[g], first[h]);
    }
    at += 4 * hosts;
  }
  size_t n = 0;
  for (const auto& ranks : host_ranks) n += ranks.size();
  all->resize(n);
  groups->resize(n);
  *merged = false;
  for (size_t h = 0; h < hosts; ++h) {
    std::string_view host;
    if (!TakeBlock(in, &at, &host)) return Malformed("hand-out entry");
    const std::vector<int>& ranks = host_ranks[h];
    const int g = cross[h];
    if (g != static_cast<int>(h) || (!host.empty() && host[0] == 'M')) {
      // The host's ranks are one group's (its message at the group's
      // lowest rank, which may be another host's).
      if (g == static_cast<int>(h)) all->at(low[g]).assign(host.substr(1));
      for (int r : ranks) {
        (*groups)[r] = low[g];
        if (r != low[g]) (*all)[r].clear();
      }
      *merged = *merged || ranks.size() > 1 || low[g] != first[h];
      continue;
    }
    if (host.empty()) return Malformed("host message (empty)");
    if (host[0] == 'E') {
      return Status::Unavailable(
          "control plane", "the host of rank " + std::to_string(first[h]) +
                               ": " + std::string(host.substr(1)));
    }
    if (host[0] != 'L') return Malformed("host message");
    size_t hat = 1;
    for (int r : ranks) {
      std::string_view m;
      if (!TakeBlock(host, &hat, &m)) return Malformed("host message entry");
      (*all)[r].assign(m);
      (*groups)[r] = r;
    }
  }
  return Status::Ok();
}

}  // namespace hvd::runtime
