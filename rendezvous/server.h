// The rendezvous gRPC server: a thin translation of proto messages to
// JobTable calls, on gRPC's callback API. Waits block on the server (no
// thread per wait, no client polling); one timer thread expires deadlines.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "rendezvous/job_table.h"

namespace hvd::rendezvous {

struct ServerTls {
  std::string cert_pem;       // server certificate chain
  std::string key_pem;        // its private key
  std::string client_ca_pem;  // when set, clients must present a cert it signed
};

struct ServerOptions {
  // HOST:PORT to listen on; port 0 picks a free one (read it back).
  std::string listen = "127.0.0.1:0";
  // Secret that CreateJob calls must present; must not be empty.
  std::string admin_token;
  TableLimits limits;
  // TLS when cert_pem is set; plaintext otherwise.
  ServerTls tls;
  // The table to serve, when it outlives a server (a restart within one
  // process); otherwise the server makes one with `limits`.
  std::shared_ptr<JobTable> table;
};

class RendezvousServer {
 public:
  // Binds and starts serving; the port is known when this returns.
  static StatusOr<std::unique_ptr<RendezvousServer>> Start(
      const ServerOptions& options);
  ~RendezvousServer();  // shuts down if Shutdown was not called

  int port() const;
  // "HOST:PORT" with the bound port; HOST as given in `listen`.
  std::string address() const;
  // The table behind the service, for an embedding process (the launcher
  // reads which ranks have joined).
  JobTable& table();
  // Its own metrics in Prometheus' text format (server_stats.h).
  std::string MetricsExposition() const;

  // Stops accepting calls, reports NOT_SERVING to health checks, answers
  // pending waits with `why`, and waits up to `grace` for in-flight calls
  // before cancelling them. Unavailable tells clients to retry (a daemon
  // that restarts); Cancelled that the job is over (the launcher's own).
  void Shutdown(const Status& why =
                    Status::Cancelled("the rendezvous server is shutting down"),
                std::chrono::milliseconds grace = std::chrono::seconds(2));

  class Impl;

 private:
  explicit RendezvousServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hvd::rendezvous
