// The key/value store through which backends bootstrap their connections.
// Backends see only this, never the rendezvous client, so tests can hand
// them an in-memory store.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvd::rendezvous {
class RendezvousClient;
}

namespace hvd::runtime {

class Store {
 public:
  virtual ~Store() = default;
  virtual Status Set(const std::string& key, const std::string& value) = 0;
  // Blocks until every key is set (or `timeout`), and returns the values in
  // the order of `keys`.
  virtual StatusOr<std::vector<std::string>> Wait(
      const std::vector<std::string>& keys,
      std::chrono::milliseconds timeout) = 0;
};

// A store in the rendezvous KV of the client's job, with every key under
// `prefix` so several backends can share one job. Does not own `client`.
std::unique_ptr<Store> MakeRendezvousStore(rendezvous::RendezvousClient* client,
                                           std::string prefix);

}  // namespace hvd::runtime
