// One process's membership in a job: its assignment, its rendezvous client
// and its backend. hvd::init() owns one; tests create several in threads.
#pragma once

#include <memory>

#include "common/status.h"
#include "rendezvous/assignment.h"
#include "runtime/backend.h"
#include "runtime/worker_config.h"

namespace hvd::rendezvous {
class RendezvousClient;
}

namespace hvd::runtime {

class Context {
 public:
  // Joins (when launched) and connects the backend. Blocks up to the start
  // timeout for the other ranks.
  static StatusOr<std::unique_ptr<Context>> Create(const WorkerConfig& config);
  ~Context();

  const rendezvous::Assignment& assignment() const { return assignment_; }
  Backend& backend() { return *backend_; }

  // Sum, then scale by 1/size for averages.
  Status Allreduce(void* data, size_t count, DataType type, bool average);

 private:
  Context() = default;

  rendezvous::Assignment assignment_;
  std::unique_ptr<rendezvous::RendezvousClient> client_;
  std::unique_ptr<Backend> backend_;
};

}  // namespace hvd::runtime
