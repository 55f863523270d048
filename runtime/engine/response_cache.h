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

#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/engine/request.h"

namespace hvd::runtime {

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
  // Adds or touches `r`. Returns the entry evicted to make room, if any.
  std::optional<Evicted> Put(const Request& r);

  // Drops the entry named `name` (a rank asked for it with other
  // metadata); returns its id if there was one.
  std::optional<uint32_t> Erase(const std::string& name);

  // Forgets every entry (in place: the free-id marks are this list's end(),
  // which a copy or move of the cache would not keep).
  void Clear() {
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
  std::list<Entry> order_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_name_;
  // order_.end() marks a free id (a list's end() never moves).
  std::vector<std::list<Entry>::iterator> by_id_;
};

}  // namespace hvd::runtime
