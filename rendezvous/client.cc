#include "rendezvous/client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <future>
#include <optional>
#include <random>
#include <thread>

#include "common/host_port.h"
#include "common/logging.h"
#include "common/random.h"
#include "proto/rendezvous.grpc.pb.h"
#include "rendezvous/backoff.h"
#include "rendezvous/client_session.h"
#include "rendezvous/grpc_status.h"
#include "rendezvous/service_util.h"

namespace hvd::rendezvous {
namespace {

namespace pb = ::hvd::rendezvous::v1;

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// Extra time past a server-side wait's own timeout, for the answer to travel.
constexpr auto kWaitSlack = std::chrono::seconds(5);

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const ClientTls& tls) {
  return NewClientChannel(address, tls.ca_pem, tls.cert_pem, tls.key_pem);
}

void SetDeadline(grpc::ClientContext& ctx, std::chrono::milliseconds timeout) {
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
}

milliseconds Left(SteadyClock::time_point deadline) {
  return std::chrono::duration_cast<milliseconds>(deadline -
                                                  SteadyClock::now());
}

// The wait before the next try, cut to end at the deadline (where one last
// try goes): the whole timeout is spent retrying, however the waits were
// drawn. Zero: the deadline has passed, give up.
milliseconds WaitBeforeRetry(Backoff& backoff,
                             SteadyClock::time_point deadline) {
  const milliseconds left = Left(deadline);
  if (left <= milliseconds(0)) return milliseconds(0);
  return std::min(backoff.Next(), left);
}

std::string Seconds(milliseconds t) {
  const int64_t tenths = (t.count() + 50) / 100;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
}

// The last error of a call that gave up on an unreachable server.
std::string StillUnreachable(const std::string& message,
                             SteadyClock::time_point since) {
  return message + " (still unreachable after " +
         Seconds(std::chrono::duration_cast<milliseconds>(SteadyClock::now() -
                                                          since)) +
         ")";
}

constexpr auto kUnavailable = static_cast<int32_t>(StatusCode::kUnavailable);

// The longest one try to create a job may take, so that a daemon that
// went away mid-call is tried again in time.
constexpr milliseconds kCreateTry{5000};

// A random id for one barrier call, never 0 (BarrierRequest.entry).
uint64_t BarrierEntry() {
  thread_local std::mt19937_64 rng([] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }());
  uint64_t e;
  do {
    e = rng();
  } while (e == 0);
  return e;
}

// `hosts` into a request's repeated field.
void AddHosts(const std::vector<HostSlots>& hosts,
              google::protobuf::RepeatedPtrField<pb::HostSlots>* out) {
  for (const HostSlots& h : hosts) {
    pb::HostSlots* added = out->Add();
    added->set_host(h.host);
    added->set_slots(h.slots);
    added->set_gpus(h.gpus);
  }
}

// CreateJob at one daemon.
StatusOr<CreatedJob> CreateJobAt(pb::Rendezvous::Stub* stub,
                                 const std::string& address,
                                 const std::string& admin_token,
                                 const pb::CreateJobRequest& req,
                                 std::chrono::milliseconds timeout) {
  grpc::ClientContext ctx;
  SetDeadline(ctx, timeout);
  // An absent daemon answers at once, so the caller's backoff (not
  // gRPC's) paces the tries.
  ctx.set_wait_for_ready(false);
  ctx.AddMetadata(kAdminTokenMetadata, admin_token);
  pb::CreateJobResponse resp;
  HVD_RETURN_IF_ERROR(FromGrpcStatus(stub->CreateJob(&ctx, req, &resp),
                                     "rendezvous " + address));
  return CreatedJob{resp.job_id(), resp.job_token(), resp.ttl_seconds()};
}

}  // namespace

// One stub per listed server (daemons serving the same jobs from one etcd
// prefix), and the one calls go to now. A call or session that finds it
// unreachable moves on to the next (Next), so retries go round the list.
class RendezvousClient::Stub {
 public:
  Stub(const std::string& addresses, const ClientTls& tls) {
    // Checked where the address was given; a malformed one fails at the
    // first call, against the text as it is.
    auto list = ParseHostPortList(addresses, "rendezvous address");
    if (!list.ok()) list = std::vector<HostPort>{};
    for (const HostPort& hp : *list) names_.push_back(hp.ToString());
    if (names_.empty()) names_.push_back(addresses);
    for (const std::string& name : names_) {
      stubs_.push_back(pb::Rendezvous::NewStub(MakeChannel(name, tls)));
    }
  }
  // The stub calls go to now, and which of the list it is.
  pb::Rendezvous::Stub* Current(size_t* index = nullptr) const {
    const size_t i = at_.load(std::memory_order_acquire);
    if (index) *index = i;
    return stubs_[i].get();
  }
  const std::string& name(size_t i) const { return names_[i]; }
  size_t size() const { return stubs_.size(); }
  // Server `index` could not be reached: the next one, unless another
  // call moved on already.
  void Next(size_t index) {
    size_t expected = index;
    at_.compare_exchange_strong(expected, (index + 1) % stubs_.size(),
                                std::memory_order_acq_rel);
  }

 private:
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<pb::Rendezvous::Stub>> stubs_;
  std::atomic<size_t> at_{0};
};

RendezvousClient::RendezvousClient(std::string address, std::string job_id,
                                   std::string job_token, const ClientTls& tls)
    : address_(std::move(address)),
      job_id_(std::move(job_id)),
      job_token_(std::move(job_token)),
      stub_(std::make_unique<Stub>(address_, tls)) {}

RendezvousClient::~RendezvousClient() {
  // Retries not yet due get their last error; any that an answer arriving
  // now starts get it at once.
  timer_.Stop();
  // The session's stream uses the stub; end it first.
  std::lock_guard<std::mutex> lock(session_mu_);
  session_.reset();
}

std::unique_ptr<RendezvousClient> RendezvousClient::Create(
    std::string address, std::string job_id, std::string job_token,
    const ClientTls& tls) {
  return std::unique_ptr<RendezvousClient>(new RendezvousClient(
      std::move(address), std::move(job_id), std::move(job_token), tls));
}

StatusOr<CreatedJob> RendezvousClient::CreateJob(
    const std::string& address, const std::string& admin_token,
    const std::vector<HostSlots>& hosts, int size,
    std::chrono::milliseconds timeout, const ClientTls& tls, bool elastic) {
  pb::CreateJobRequest req;
  AddHosts(hosts, req.mutable_hosts());
  req.set_size(size);
  req.set_elastic(elastic);
  HVD_ASSIGN_OR_RETURN(std::string key, RandomHex(32));
  req.set_creation_key(key);
  // Each listed daemon in turn, with backoff, while none can be reached
  // (or a try's answer is lost): the key makes a repeat harmless.
  Stub stubs(address, tls);
  const auto start = SteadyClock::now();
  const auto deadline = start + timeout;
  Backoff backoff(BackoffSeed());
  bool said = false;
  for (;;) {
    size_t at;
    pb::Rendezvous::Stub* stub = stubs.Current(&at);
    StatusOr<CreatedJob> job =
        CreateJobAt(stub, stubs.name(at), admin_token, req,
                    std::clamp(Left(deadline), milliseconds(1), kCreateTry));
    const StatusCode code = job.status().code();
    if (code != StatusCode::kUnavailable &&
        code != StatusCode::kDeadlineExceeded) {
      if (said) {
        HVD_LOG(Info) << "rendezvous " << address << " answers again";
      }
      return job;
    }
    stubs.Next(at);
    const milliseconds wait = WaitBeforeRetry(backoff, deadline);
    if (wait <= milliseconds(0)) {
      return Status(code, StillUnreachable(job.status().message(), start));
    }
    if (!said) {
      said = true;
      HVD_LOG(Warning) << job.status().message()
                       << "; retrying until it answers (create job: for up "
                          "to "
                       << Seconds(Left(deadline)) << " more)";
    }
    std::this_thread::sleep_for(wait);
  }
}

Status RendezvousClient::Unary(
    const std::string& what,
    const std::function<Status(std::chrono::milliseconds)>& call) {
  const auto start = SteadyClock::now();
  const auto deadline = start + call_timeout();
  std::optional<Backoff> backoff;
  for (;;) {
    size_t at;
    stub_->Current(&at);
    Status s = call(std::max(Left(deadline), milliseconds(1)));
    if (s.code() != StatusCode::kUnavailable) {
      if (backoff) Reached();
      return s;
    }
    stub_->Next(at);
    if (!backoff) backoff.emplace(BackoffSeed());
    const milliseconds wait = WaitBeforeRetry(*backoff, deadline);
    if (wait <= milliseconds(0)) {
      return Status::Unavailable(StillUnreachable(s.message(), start));
    }
    Unreachable(s.message(), what, Left(deadline));
    std::this_thread::sleep_for(wait);
  }
}

template <typename Request, typename Response, typename Method>
Status RendezvousClient::JobCall(const std::string& what, Request& req,
                                 Response* resp, Method method, int* tries) {
  req.set_job_id(job_id_);
  return Unary(what, [&](milliseconds timeout) {
    if (tries) ++*tries;
    grpc::ClientContext ctx;
    SetDeadline(ctx, timeout);
    ctx.AddMetadata(kJobTokenMetadata, job_token_);
    return FromGrpcStatus((stub_->Current()->*method)(&ctx, req, resp),
                          "rendezvous " + address_ + " " + what);
  });
}

Status RendezvousClient::KeepAlive() {
  pb::KeepAliveRequest req;
  pb::KeepAliveResponse resp;
  return JobCall("keep-alive", req, &resp, &pb::Rendezvous::Stub::KeepAlive);
}

Status RendezvousClient::EndJob(const std::string& reason) {
  pb::EndJobRequest req;
  req.set_reason(reason);
  pb::EndJobResponse resp;
  int tries = 0;
  Status s =
      JobCall("end job", req, &resp, &pb::Rendezvous::Stub::EndJob, &tries);
  // A retry after a lost answer finds the job already ended.
  if (tries > 1 && s.code() == StatusCode::kNotFound) return Status::Ok();
  return s;
}

StatusOr<JobInfo> RendezvousClient::GetJob() {
  pb::GetJobRequest req;
  pb::GetJobResponse resp;
  HVD_RETURN_IF_ERROR(
      JobCall("get job", req, &resp, &pb::Rendezvous::Stub::GetJob));
  JobInfo info;
  info.size = resp.size();
  info.joined.assign(resp.joined_ranks().begin(), resp.joined_ranks().end());
  return info;
}

StatusOr<int> RendezvousClient::SetMembership(
    const std::vector<HostSlots>& hosts, int size, int from_epoch) {
  pb::SetMembershipRequest req;
  AddHosts(hosts, req.mutable_hosts());
  req.set_size(size);
  req.set_epoch(from_epoch);
  pb::SetMembershipResponse resp;
  HVD_RETURN_IF_ERROR(JobCall("set membership", req, &resp,
                              &pb::Rendezvous::Stub::SetMembership));
  return resp.epoch();
}

void RendezvousClient::Unreachable(const std::string& why,
                                   const std::string& what,
                                   std::chrono::milliseconds left) {
  std::lock_guard<std::mutex> lock(outage_mu_);
  if (outage_) return;
  outage_ = true;
  outage_since_ = SteadyClock::now();
  HVD_LOG(Warning) << why << "; retrying until it answers (" << what
                   << ": for up to " << Seconds(left) << " more)";
}

void RendezvousClient::Reached() {
  std::lock_guard<std::mutex> lock(outage_mu_);
  if (!outage_) return;
  outage_ = false;
  HVD_LOG(Info) << "rendezvous " << address_ << " answers again, after "
                << Seconds(std::chrono::duration_cast<milliseconds>(
                       SteadyClock::now() - outage_since_));
}

// One op on its way, resent while the server cannot be reached.
struct RendezvousClient::Attempt {
  pb::Op op;
  SteadyClock::time_point start, deadline;
  std::string what;
  std::optional<Backoff> backoff;  // from the first failure on
  std::function<void(const pb::OpResult&)> done;
};

void RendezvousClient::Submit(pb::Op op, std::chrono::milliseconds retry_for,
                              std::string what,
                              std::function<void(const pb::OpResult&)> done) {
  auto a = std::make_shared<Attempt>();
  a->op = std::move(op);
  a->start = SteadyClock::now();
  a->deadline = a->start + retry_for;
  a->what = std::move(what);
  a->done = std::move(done);
  Send(a);
}

void RendezvousClient::Send(const std::shared_ptr<Attempt>& a) {
  // A wait that is sent again waits only for what is left of its timeout.
  if (a->backoff) {
    const int64_t left = std::max<int64_t>(1, Left(a->deadline).count());
    if (a->op.has_wait()) a->op.mutable_wait()->set_timeout_ms(left);
    if (a->op.has_barrier()) a->op.mutable_barrier()->set_timeout_ms(left);
    if (a->op.has_join() && a->op.join().timeout_ms() > 0) {
      a->op.mutable_join()->set_timeout_ms(left);
    }
  }
  Session()->Submit(a->op,
                    [this, a](const pb::OpResult& r) { Answered(a, r); });
}

void RendezvousClient::Answered(const std::shared_ptr<Attempt>& a,
                                const pb::OpResult& r) {
  if (r.code() != kUnavailable) {
    if (a->backoff) Reached();
    return a->done(r);
  }
  if (!a->backoff) a->backoff.emplace(BackoffSeed());
  const milliseconds wait = WaitBeforeRetry(*a->backoff, a->deadline);
  pb::OpResult last = r;
  last.set_message(StillUnreachable(r.message(), a->start));
  if (wait <= milliseconds(0)) return a->done(last);
  Unreachable(r.message(), a->what, Left(a->deadline));
  timer_.After(wait, [this, a, last](bool run) {
    if (run) return Send(a);
    a->done(last);
  });
}

std::shared_ptr<ClientSession> RendezvousClient::Session() {
  std::lock_guard<std::mutex> lock(session_mu_);
  if (!session_ || session_->ended()) {
    // An ended session's server may be gone: the next listed one.
    if (session_) stub_->Next(session_at_);
    pb::Rendezvous::Stub* stub = stub_->Current(&session_at_);
    session_ = std::make_shared<ClientSession>(stub, job_id_, job_token_,
                                               "rendezvous " + address_);
  }
  return session_;
}

void RendezvousClient::JoinAsync(const std::string& host, int slot,
                                 int previous_generation,
                                 std::function<void(StatusOr<Assignment>)> done,
                                 std::chrono::milliseconds wait) {
  pb::Op op;
  op.mutable_join()->set_host(host);
  op.mutable_join()->set_slot(slot);
  op.mutable_join()->set_previous_generation(previous_generation);
  op.mutable_join()->set_timeout_ms(wait.count());
  std::string where = "rendezvous " + address_ + " join";
  Submit(std::move(op), wait.count() > 0 ? wait : call_timeout(), "join",
         [done = std::move(done), where](const pb::OpResult& r) {
           Status s = ResultStatus(r, where);
           if (!s.ok()) return done(s);
           done(AssignmentFromProto(r.assignment()));
         });
}

void RendezvousClient::SetAsync(const std::string& key,
                                const std::string& value,
                                std::function<void(Status)> done) {
  pb::Op op;
  op.mutable_set()->set_key(key);
  op.mutable_set()->set_value(value);
  std::string where = "rendezvous " + address_ + " set '" + key + "'";
  Submit(std::move(op), call_timeout(), "set '" + key + "'",
         [done = std::move(done), where](const pb::OpResult& r) {
           done(ResultStatus(r, where));
         });
}

void RendezvousClient::GetAsync(
    const std::string& key, std::function<void(StatusOr<std::string>)> done) {
  pb::Op op;
  op.mutable_get()->set_key(key);
  std::string where = "rendezvous " + address_ + " get";
  Submit(std::move(op), call_timeout(), "get '" + key + "'",
         [done = std::move(done), where](const pb::OpResult& r) {
           Status s = ResultStatus(r, where);
           if (!s.ok()) return done(s);
           done(r.value());
         });
}

void RendezvousClient::WaitAsync(
    const std::vector<std::string>& keys, std::chrono::milliseconds timeout,
    std::function<void(StatusOr<std::vector<std::string>>)> done) {
  pb::Op op;
  for (const std::string& k : keys) op.mutable_wait()->add_keys(k);
  timeout = std::max(timeout, milliseconds(1));
  op.mutable_wait()->set_timeout_ms(timeout.count());
  std::string where = "rendezvous " + address_;
  Submit(std::move(op), timeout,
         "wait for '" + (keys.empty() ? std::string() : keys[0]) + "'" +
             (keys.size() > 1
                  ? " and " + std::to_string(keys.size() - 1) + " more keys"
                  : ""),
         [done = std::move(done), where](const pb::OpResult& r) {
           Status s = ResultStatus(r, where);
           if (!s.ok()) return done(s);
           done(std::vector<std::string>(r.wait().values().begin(),
                                         r.wait().values().end()));
         });
}

void RendezvousClient::BarrierAsync(const std::string& name, int rank,
                                    std::chrono::milliseconds timeout,
                                    std::function<void(Status)> done) {
  pb::Op op;
  op.mutable_barrier()->set_name(name);
  op.mutable_barrier()->set_rank(rank);
  timeout = std::max(timeout, milliseconds(1));
  op.mutable_barrier()->set_timeout_ms(timeout.count());
  // The same in every retry of this call (Submit sends `op` again).
  op.mutable_barrier()->set_entry(BarrierEntry());
  std::string where = "rendezvous " + address_;
  Submit(std::move(op), timeout, "barrier '" + name + "'",
         [done = std::move(done), where](const pb::OpResult& r) {
           done(ResultStatus(r, where));
         });
}

namespace {

// Runs an async call and waits for its answer up to `timeout`. The promise
// is shared, so an answer arriving after the caller gave up is harmless.
template <typename T, typename Start>
T Await(Start&& start, std::chrono::milliseconds timeout,
        const std::string& what) {
  auto promise = std::make_shared<std::promise<T>>();
  std::future<T> future = promise->get_future();
  start([promise](T value) { promise->set_value(std::move(value)); });
  if (future.wait_for(timeout) != std::future_status::ready) {
    return Status::DeadlineExceeded(
        what, "no answer within " + std::to_string(timeout.count()) +
                  " ms; the server may be overloaded or unreachable");
  }
  return future.get();
}

}  // namespace

StatusOr<Assignment> RendezvousClient::Join(const std::string& host, int slot,
                                            std::chrono::milliseconds timeout,
                                            int previous_generation) {
  // The join retries while the server cannot be reached (not started yet,
  // or restarting), and an elastic job's member waits at the server for
  // the next membership, both for as long as this join may take.
  timeout = std::max(timeout, milliseconds(1));
  auto r = Await<StatusOr<Assignment>>(
      [&](auto done) {
        JoinAsync(host, slot, previous_generation, std::move(done), timeout);
      },
      timeout + kWaitSlack, "rendezvous " + address_ + " join");
  if (r.status().code() == StatusCode::kUnavailable) {
    return Status::Unavailable(
        r.status().message(),
        "raise --start-timeout if the server starts slowly");
  }
  return r;
}

Status RendezvousClient::Set(const std::string& key, const std::string& value) {
  return Await<Status>(
      [&](auto done) { SetAsync(key, value, std::move(done)); },
      call_timeout() + kWaitSlack,
      "rendezvous " + address_ + " set '" + key + "'");
}

StatusOr<std::string> RendezvousClient::Get(const std::string& key) {
  return Await<StatusOr<std::string>>(
      [&](auto done) { GetAsync(key, std::move(done)); },
      call_timeout() + kWaitSlack,
      "rendezvous " + address_ + " get '" + key + "'");
}

StatusOr<std::vector<std::string>> RendezvousClient::Wait(
    const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  return Await<StatusOr<std::vector<std::string>>>(
      [&](auto done) { WaitAsync(keys, timeout, std::move(done)); },
      timeout + kWaitSlack, "rendezvous " + address_ + " wait");
}

Status RendezvousClient::Barrier(const std::string& name, int rank,
                                 std::chrono::milliseconds timeout) {
  return Await<Status>(
      [&](auto done) { BarrierAsync(name, rank, timeout, std::move(done)); },
      timeout + kWaitSlack, "rendezvous " + address_ + " barrier");
}

}  // namespace hvd::rendezvous
