// Client of the rendezvous service, used by workers (libhvd) and by the
// launcher to create jobs. Every call has a deadline; errors name the
// server and say what to check.
//
// A server that cannot be reached (not started yet, restarting, a network
// blip) is retried with backoff and jitter until the call's own deadline:
// a wait, barrier or join resumes against the server that comes back,
// waiting only for what is left of its timeout; the other calls retry for
// call_timeout(). The client says once per outage, on stderr, what it is
// waiting for, and a call that never reaches the server ends with one
// error saying so. CreateJob retries for its own timeout, and is applied
// once however often it is sent (its creation key).
//
// Thread-safety: a RendezvousClient may be used from several threads.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "rendezvous/assignment.h"
#include "rendezvous/job_table.h"
#include "rendezvous/retry_timer.h"

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
namespace v1 {
class Op;
class OpResult;
}  // namespace v1

class RendezvousClient {
 public:
  // Channels are created lazily; nothing is sent until the first call.
  // `address`: HOST:PORT, or several (daemons serving the same jobs from
  // one etcd prefix): calls go to one, and to the next listed when it
  // cannot be reached.
  static std::unique_ptr<RendezvousClient> Create(std::string address,
                                                  std::string job_id,
                                                  std::string job_token,
                                                  const ClientTls& tls = {});
  ~RendezvousClient();

  // Creates a job on the server at `address` (needs the admin token);
  // of several listed, at the first that can be reached, trying them in
  // turn with backoff until `timeout` while none can. Every try carries
  // the same random creation key, so a try whose answer was lost (the
  // daemon restarted after writing the job) gets the job it made, not a
  // second one. `elastic`: its hosts come with SetMembership
  // (JobTable::CreateJob).
  static StatusOr<CreatedJob> CreateJob(const std::string& address,
                                        const std::string& admin_token,
                                        const std::vector<HostSlots>& hosts,
                                        int size,
                                        std::chrono::milliseconds timeout,
                                        const ClientTls& tls = {},
                                        bool elastic = false);

  // Job management, for the job's creator.
  Status KeepAlive();
  Status EndJob(const std::string& reason);
  StatusOr<JobInfo> GetJob();
  // An elastic job's next membership after `from_epoch` (the one this
  // caller last set, 0 at first); its epoch. Retried as the calls above,
  // and safe to retry: the daemon applies it once (SetMembershipRequest).
  StatusOr<int> SetMembership(const std::vector<HostSlots>& hosts, int size,
                              int from_epoch);

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

  // How long calls without a timeout of their own (Set, Get, KeepAlive,
  // GetJob, EndJob) wait for an unreachable server.
  static constexpr std::chrono::milliseconds kDefaultCallTimeout{30000};
  std::chrono::milliseconds call_timeout() const {
    return std::chrono::milliseconds(call_timeout_ms_.load());
  }
  void set_call_timeout(std::chrono::milliseconds t) {
    call_timeout_ms_.store(t.count());
  }

  class Stub;

 private:
  struct Attempt;
  // Sends `op` on the session, and again after a backoff while the server
  // cannot be reached, until `retry_for` has passed; `what` names the call
  // in the outage line.
  void Submit(v1::Op op, std::chrono::milliseconds retry_for, std::string what,
              std::function<void(const v1::OpResult&)> done);
  void Send(const std::shared_ptr<Attempt>& a);
  void Answered(const std::shared_ptr<Attempt>& a, const v1::OpResult& r);
  // Runs `call` (a unary RPC) until it reaches the server or `retry_for`
  // passes.
  Status Unary(const std::string& what,
               const std::function<Status(std::chrono::milliseconds)>& call);
  // One of the job's unary calls (its id in `req`, its token in the
  // metadata) through Unary: `method` is the stub's; `*tries` (when given)
  // counts the attempts.
  template <typename Request, typename Response, typename Method>
  Status JobCall(const std::string& what, Request& req, Response* resp,
                 Method method, int* tries = nullptr);
  // The outage line, once per outage; and its end.
  void Unreachable(const std::string& why, const std::string& what,
                   std::chrono::milliseconds left);
  void Reached();

  // The open session, or a new one when there is none or it ended.
  std::shared_ptr<ClientSession> Session();
  RendezvousClient(std::string address, std::string job_id,
                   std::string job_token, const ClientTls& tls);

  std::string address_;
  std::string job_id_;
  std::string job_token_;
  std::atomic<int64_t> call_timeout_ms_{kDefaultCallTimeout.count()};
  std::unique_ptr<Stub> stub_;
  std::mutex outage_mu_;
  bool outage_ = false;                                 // guarded by outage_mu_
  std::chrono::steady_clock::time_point outage_since_;  // guarded by outage_mu_
  std::mutex session_mu_;
  std::shared_ptr<ClientSession> session_;  // guarded by session_mu_
  size_t session_at_ = 0;  // which listed server it speaks to; session_mu_
  // Last: its tasks use the rest; stopped first in the destructor.
  RetryTimer timer_;
};

}  // namespace hvd::rendezvous
