// The response cache: requests that completed before, remembered by a
// small id, so the next time a rank submits the same tensor with the same
// metadata it only sets a bit.
//
// Every rank holds an identical copy: entries are added and touched only
// when tensors complete, and every rank completes the same tensors in the
// same order. Eviction is least-recently-used, with ids reused lowest
// first, so the copies stay identical. Capacity 0 disables the cache.
//
// Not thread-safe: only the engine thread uses it.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/engine/request.h"

namespace hvd::runtime {

// The cached tensors a rank has pending, held as the bit string its
// messages carry (bit `id` set: that tensor), without trailing zero bytes,
// so that equal sets are equal bytes on every rank.
class CachedIds {
 public:
  // Whether `id` was new (insert) or there (erase).
  bool insert(uint32_t id);
  bool erase(uint32_t id);
  bool contains(uint32_t id) const {
    return id / 8 < bits_.size() && ((bits_[id / 8] >> (id % 8)) & 1);
  }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  void clear() {
    bits_.clear();
    count_ = 0;
  }
  std::string_view bits() const { return bits_; }
  // The lowest id (not empty).
  uint32_t first() const;
  // The ids, lowest first.
  std::vector<uint32_t> ids() const;
  void ids(std::vector<uint32_t>* out) const;  // into a vector kept warm

 private:
  std::string bits_;
  size_t count_ = 0;
};

class ResponseCache {
 public:
  explicit ResponseCache(size_t capacity)
      : capacity_(capacity), by_id_(capacity, order_.end()) {}

  size_t capacity() const { return capacity_; }
  // The id of an entry with this name and exactly this metadata.
  std::optional<uint32_t> Lookup(const Request& r) const;
  const Request& Get(uint32_t id) const { return by_id_[id]->request; }
  bool Has(uint32_t id) const {
    return id < capacity_ && by_id_[id] != order_.end();
  }

  struct Evicted {
    uint32_t id;
    std::string name;
  };
  // Marks the entry `id` used now, as Put of its own request does.
  void Touch(uint32_t id) {
    // (A loop's one tensor is the most recent already: nothing to move.)
    if (by_id_[id] != order_.begin()) {
      order_.splice(order_.begin(), order_, by_id_[id]);
    }
  }

  // Moves whenever an id may come to stand for another request (an entry
  // added, replaced, updated or erased): an id found at one generation
  // still stands for the same request while it is unchanged. Touch leaves
  // it alone.
  uint64_t generation() const { return generation_; }
  // Adds or touches `r`. Returns the entry evicted to make room, if any.
  std::optional<Evicted> Put(const Request& r);

  // Drops the entry named `name` (a rank asked for it with other
  // metadata); returns its id if there was one.
  std::optional<uint32_t> Erase(const std::string& name);

  // Forgets every entry (in place: the free-id marks are this list's end(),
  // which a copy or move of the cache would not keep).
  void Clear() {
    ++generation_;
    order_.clear();
    by_name_.clear();
    by_id_.assign(capacity_, order_.end());
  }
  ResponseCache(const ResponseCache&) = delete;
  ResponseCache& operator=(const ResponseCache&) = delete;

 private:
  struct Entry {
    uint32_t id;
    Request request;
  };
  size_t capacity_;
  uint64_t generation_ = 0;
  std::list<Entry> order_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_name_;
  // order_.end() marks a free id (a list's end() never moves).
  std::vector<std::list<Entry>::iterator> by_id_;
};

}  // namespace hvd::runtime
