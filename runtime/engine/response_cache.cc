#include "runtime/engine/response_cache.h"

namespace hvd::runtime {

bool CachedIds::insert(uint32_t id) {
  if (contains(id)) return false;
  if (bits_.size() <= id / 8) bits_.resize(id / 8 + 1, '\0');
  bits_[id / 8] = static_cast<char>(bits_[id / 8] | (1 << (id % 8)));
  ++count_;
  return true;
}

bool CachedIds::erase(uint32_t id) {
  if (!contains(id)) return false;
  bits_[id / 8] = static_cast<char>(bits_[id / 8] & ~(1 << (id % 8)));
  --count_;
  while (!bits_.empty() && bits_.back() == '\0') bits_.pop_back();
  return true;
}

uint32_t CachedIds::first() const {
  size_t i = 0;
  while (bits_[i] == '\0') ++i;
  return static_cast<uint32_t>(
      i * 8 + __builtin_ctz(static_cast<unsigned char>(bits_[i])));
}

std::vector<uint32_t> CachedIds::ids() const {
  std::vector<uint32_t> out;
  ids(&out);
  return out;
}

void CachedIds::ids(std::vector<uint32_t>* out) const {
  out->clear();
  for (size_t i = 0; i < bits_.size(); ++i) {
    for (unsigned b = static_cast<uint8_t>(bits_[i]); b; b &= b - 1) {
      out->push_back(static_cast<uint32_t>(i * 8) +
                     static_cast<uint32_t>(__builtin_ctz(b)));
    }
  }
}

std::optional<uint32_t> ResponseCache::Lookup(const Request& r) const {
  auto it = by_name_.find(r.name);
  if (it == by_name_.end() || !(it->second->request == r)) return std::nullopt;
  return it->second->id;
}

std::optional<ResponseCache::Evicted> ResponseCache::Put(const Request& r) {
  if (capacity_ == 0) return std::nullopt;
  ++generation_;
  auto it = by_name_.find(r.name);
  if (it != by_name_.end()) {
    // Touch (and take the new metadata, if it changed).
    it->second->request = r;
    order_.splice(order_.begin(), order_, it->second);
    return std::nullopt;
  }
  std::optional<Evicted> evicted;
  uint32_t id = 0;
  if (order_.size() == capacity_) {
    Entry& victim = order_.back();
    id = victim.id;
    evicted = Evicted{id, victim.request.name};
    by_name_.erase(victim.request.name);
    order_.pop_back();
  } else {
    while (by_id_[id] != order_.end()) ++id;  // the lowest free id
  }
  order_.push_front(Entry{id, r});
  by_name_[r.name] = order_.begin();
  by_id_[id] = order_.begin();
  return evicted;
}

std::optional<uint32_t> ResponseCache::Erase(const std::string& name) {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  ++generation_;
  uint32_t id = it->second->id;
  by_id_[id] = order_.end();
  order_.erase(it->second);
  by_name_.erase(it);
  return id;
}

}  // namespace hvd::runtime
