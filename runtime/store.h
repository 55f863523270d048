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
  // Ok while the generation this store bootstraps is the job's newest;
  // Aborted once an elastic job's membership has moved past it. The peers a
  // rank waits for in a superseded generation have gone on to the next (or
  // are gone), so a wait that sees it stops at once instead of at its
  // timeout. Wait checks it itself; a wait outside the store (accepting
  // peers' connections) asks between its polls. A store without
  // generations is always current.
  virtual Status Current() { return Status::Ok(); }
};

// A store in the rendezvous KV of the client's job, with every key under
// `prefix` so several backends can share one job. Does not own `client`.
// `generation` > 0, in an elastic job only: the generation its keys belong
// to, for Current() (against the launcher's membership epoch,
// rendezvous/assignment.h); waits then poll (a fixed job's never need to).
std::unique_ptr<Store> MakeRendezvousStore(rendezvous::RendezvousClient* client,
                                           std::string prefix,
                                           int generation = 0);

}  // namespace hvd::runtime
