// Client of the rendezvous service, used by workers (libhvd) and by the
// launcher to create jobs. Every call has a deadline; errors name the
// server and say what to check.
//
// Thread-safety: a RendezvousClient may be used from several threads.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "rendezvous/assignment.h"
#include "rendezvous/job_table.h"

namespace hvd::rendezvous {

// How a client secures its channel: plaintext when ca_pem is empty, else
// TLS verifying the server against ca_pem, and presenting cert/key when
// the server wants mutual TLS.
struct ClientTls {
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
};

class ClientSession;

class RendezvousClient {
 public:
  // Channels are created lazily; nothing is sent until the first call.
  static std::unique_ptr<RendezvousClient> Create(std::string address,
                                                  std::string job_id,
                                                  std::string job_token,
                                                  const ClientTls& tls = {});
  ~RendezvousClient();

  // Creates a job on the server at `address` (needs the admin token).
  static StatusOr<CreatedJob> CreateJob(const std::string& address,
                                        const std::string& admin_token,
                                        const std::vector<HostSlots>& hosts,
                                        int size,
                                        std::chrono::milliseconds timeout,
                                        const ClientTls& tls = {});

  // Job management, for the job's creator.
  Status KeepAlive();
  Status EndJob(const std::string& reason);
  StatusOr<JobInfo> GetJob();

  // Join, Set, Get, Wait and Barrier travel over one Session stream per
  // client (opened on first use, reopened after it breaks), so a call costs
  // a message, not an RPC.

  // Retries for up to `timeout` while the server is unreachable, so workers
  // that start before the network is ready still join. A process that has
  // joined before passes the generation it left (JobTable::Join); in an
  // elastic job a member of the current membership waits, up to
  // `timeout`, for the next one (JobTable::JoinWait).
  StatusOr<Assignment> Join(const std::string& host, int slot,
                            std::chrono::milliseconds timeout,
                            int previous_generation = 0);
  Status Set(const std::string& key, const std::string& value);
  StatusOr<std::string> Get(const std::string& key);
  StatusOr<std::vector<std::string>> Wait(const std::vector<std::string>& keys,
                                          std::chrono::milliseconds timeout);
  Status Barrier(const std::string& name, int rank,
                 std::chrono::milliseconds timeout);

  // The same calls without blocking: `done` runs once, on a gRPC thread,
  // and must not block. Many may be in flight; they are batched.
  // `wait` > 0: a member of an elastic job's current membership waits that
  // long at the server for the next one (0: answered at once).
  void JoinAsync(const std::string& host, int slot, int previous_generation,
                 std::function<void(StatusOr<Assignment>)> done,
                 std::chrono::milliseconds wait = std::chrono::milliseconds(0));
  void SetAsync(const std::string& key, const std::string& value,
                std::function<void(Status)> done);
  void GetAsync(const std::string& key,
                std::function<void(StatusOr<std::string>)> done);
  void WaitAsync(const std::vector<std::string>& keys,
                 std::chrono::milliseconds timeout,
                 std::function<void(StatusOr<std::vector<std::string>>)> done);
  void BarrierAsync(const std::string& name, int rank,
                    std::chrono::milliseconds timeout,
                    std::function<void(Status)> done);

  const std::string& address() const { return address_; }
  const std::string& job_id() const { return job_id_; }

  class Stub;

 private:
  // The open session, or a new one when there is none or it ended.
  std::shared_ptr<ClientSession> Session();
  RendezvousClient(std::string address, std::string job_id,
                   std::string job_token, const ClientTls& tls);

  std::string address_;
  std::string job_id_;
  std::string job_token_;
  std::unique_ptr<Stub> stub_;
  std::mutex session_mu_;
  std::shared_ptr<ClientSession> session_;  // guarded by session_mu_
};

}  // namespace hvd::rendezvous
