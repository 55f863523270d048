// The client side of the Session stream: ops are queued, packed into as
// few messages as the stream allows, and answered by id through callbacks.
// Private to the client library.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "proto/rendezvous.grpc.pb.h"

namespace hvd::rendezvous {

class ClientSession {
 public:
  // Called once per op, on a gRPC thread; must not block.
  using Callback = std::function<void(const v1::OpResult& result)>;

  // Opens the stream; `where` names the server in errors.
  ClientSession(v1::Rendezvous::Stub* stub, const std::string& job_id,
                const std::string& job_token, std::string where);
  // Cancels the stream; pending ops are answered CANCELLED. Blocks until
  // gRPC is done with the stream.
  ~ClientSession();

  // Queues `op` (its id is assigned here). When the stream has ended, the
  // callback runs at once with the stream's error.
  void Submit(v1::Op op, Callback done);

  // True once the stream has ended; a new session is needed then.
  bool ended() const;

  class Reactor;

 private:
  std::unique_ptr<Reactor> reactor_;
};

// The Status of an op's result, with `what` and the server for context.
Status ResultStatus(const v1::OpResult& result, const std::string& where);

}  // namespace hvd::rendezvous
