#include "rendezvous/store/etcd_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <thread>

#include "common/host_port.h"
#include "proto/etcd.grpc.pb.h"
#include "rendezvous/backoff.h"
#include "rendezvous/grpc_status.h"

namespace hvd::rendezvous::store {
namespace {

namespace pb = ::etcdserverpb;
using SteadyClock = std::chrono::steady_clock;

// One try against one member: a member that is partitioned away must not
// hold the whole call.
constexpr auto kAttemptTimeout = std::chrono::seconds(3);
constexpr int64_t kPageKeys = 1000;

bool MovesOn(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

EtcdKv FromProto(const pb::KeyValue& kv) {
  EtcdKv out;
  out.key = kv.key();
  out.value = kv.value();
  out.create_revision = kv.create_revision();
  out.mod_revision = kv.mod_revision();
  out.lease = kv.lease();
  return out;
}

void ToProto(const EtcdOp& op, pb::RequestOp* out) {
  switch (op.kind) {
    case EtcdOp::Kind::kPut: {
      pb::PutRequest* put = out->mutable_request_put();
      put->set_key(op.key);
      put->set_value(op.value);
      put->set_lease(op.lease);
      return;
    }
    case EtcdOp::Kind::kDelete: {
      pb::DeleteRangeRequest* del = out->mutable_request_delete_range();
      del->set_key(op.key);
      del->set_range_end(op.range_end);
      return;
    }
    case EtcdOp::Kind::kGet:
      out->mutable_request_range()->set_key(op.key);
      return;
  }
}

void ToProto(const EtcdCompare& c, pb::Compare* out) {
  out->set_result(pb::Compare::EQUAL);
  out->set_key(c.key);
  if (c.target == EtcdCompare::Target::kCreateRevision) {
    out->set_target(pb::Compare::CREATE);
    out->set_create_revision(c.revision);
  } else {
    out->set_target(pb::Compare::MOD);
    out->set_mod_revision(c.revision);
  }
}

}  // namespace

class EtcdClient::Impl {
 public:
  struct Member {
    std::string address;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<pb::KV::Stub> kv;
    std::unique_ptr<pb::Watch::Stub> watch;
    std::unique_ptr<pb::Lease::Stub> lease;
    std::unique_ptr<pb::Auth::Stub> auth;
  };

  explicit Impl(EtcdOptions o) : o_(std::move(o)) {
    for (const std::string& address : o_.endpoints) {
      Member m;
      m.address = address;
      m.channel = NewClientChannel(address, o_.ca_pem, o_.cert_pem, o_.key_pem);
      m.kv = pb::KV::NewStub(m.channel);
      m.watch = pb::Watch::NewStub(m.channel);
      m.lease = pb::Lease::NewStub(m.channel);
      m.auth = pb::Auth::NewStub(m.channel);
      members_.push_back(std::move(m));
    }
  }

  // Runs `call(member, ctx)` until it succeeds, fails for a reason other
  // than an unreachable member, or the call's time is up; moves to the
  // next member after each unreachable one.
  template <typename Call>
  Status Unary(const char* what, Call&& call) {
    const auto until = SteadyClock::now() + o_.call_timeout;
    Backoff backoff(BackoffSeed(), std::chrono::milliseconds(20),
                    std::chrono::milliseconds(500));
    bool reauthenticated = false;
    for (;;) {
      size_t at;
      std::string token;
      {
        std::lock_guard<std::mutex> lock(mu_);
        at = current_;
        token = token_;
      }
      Member& m = members_[at];
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() +
                       std::min<SteadyClock::duration>(
                           kAttemptTimeout, until - SteadyClock::now()));
      if (!token.empty()) ctx.AddMetadata("token", token);
      const grpc::Status s = call(m, ctx);
      if (s.ok()) return Status::Ok();
      if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED &&
          !o_.user.empty() && !reauthenticated) {
        // Tokens expire (etcd's simple tokens after five idle minutes).
        reauthenticated = true;
        HVD_RETURN_IF_ERROR(Authenticate(m));
        continue;
      }
      if (!MovesOn(s) || SteadyClock::now() >= until) {
        return Failed(s, m.address, what);
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (current_ == at) current_ = (at + 1) % members_.size();
      }
      std::this_thread::sleep_for(std::min<SteadyClock::duration>(
          backoff.Next(),
          std::max<SteadyClock::duration>(until - SteadyClock::now(), {})));
    }
  }

  Status Authenticate(Member& m) {
    pb::AuthenticateRequest req;
    req.set_name(o_.user);
    req.set_password(o_.password);
    pb::AuthenticateResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kAttemptTimeout);
    const grpc::Status s = m.auth->Authenticate(&ctx, req, &resp);
    if (!s.ok()) return Failed(s, m.address, "authenticate as " + o_.user);
    std::lock_guard<std::mutex> lock(mu_);
    token_ = resp.token();
    return Status::Ok();
  }

  Status AuthenticateAny() {
    return Unary("authenticate", [&](Member& m, grpc::ClientContext&) {
      const Status s = Authenticate(m);
      if (s.ok()) return grpc::Status::OK;
      return ToGrpcStatus(s);
    });
  }

  static Status Failed(const grpc::Status& s, const std::string& address,
                       const std::string& what) {
    std::string message = s.error_message();
    if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
      message = "cannot reach etcd (" + message +
                "); check that the cluster runs and --store lists its "
                "members";
    }
    return Status(static_cast<StatusCode>(s.error_code()),
                  "etcd " + address + ": " + what + ": " + message);
  }

  Member& CurrentMember() {
    std::lock_guard<std::mutex> lock(mu_);
    return members_[current_];
  }

  std::string Current() const {
    std::lock_guard<std::mutex> lock(mu_);
    return members_[current_].address;
  }

  std::string Token() const {
    std::lock_guard<std::mutex> lock(mu_);
    return token_;
  }

  const EtcdOptions o_;
  std::vector<Member> members_;

 private:
  mutable std::mutex mu_;
  size_t current_ = 0;  // guarded by mu_
  std::string token_;   // guarded by mu_
};

EtcdClient::EtcdClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EtcdClient::~EtcdClient() = default;

StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Connect(
    const EtcdOptions& options) {
  if (options.endpoints.empty()) {
    return Status::InvalidArgument("--store",
                                   "etcd:// needs at least one HOST:PORT");
  }
  TuneGrpcRuntimeOnce();
  auto impl = std::make_unique<Impl>(options);
  if (!options.user.empty()) HVD_RETURN_IF_ERROR(impl->AuthenticateAny());
  return std::unique_ptr<EtcdClient>(new EtcdClient(std::move(impl)));
}

std::string EtcdClient::PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(end.back() + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

std::string EtcdClient::endpoint() const { return impl_->Current(); }

StatusOr<std::vector<EtcdKv>> EtcdClient::List(const std::string& prefix,
                                               int64_t* revision) {
  std::vector<EtcdKv> out;
  const std::string end = PrefixEnd(prefix);
  std::string from = prefix;
  int64_t at = 0;  // every page at the first page's revision
  for (;;) {
    pb::RangeRequest req;
    req.set_key(from);
    req.set_range_end(end);
    req.set_limit(kPageKeys);
    req.set_revision(at);
    pb::RangeResponse resp;
    HVD_RETURN_IF_ERROR(
        impl_->Unary("list", [&](Impl::Member& m, grpc::ClientContext& ctx) {
          return m.kv->Range(&ctx, req, &resp);
        }));
    if (at == 0) at = resp.header().revision();
    for (const pb::KeyValue& kv : resp.kvs()) out.push_back(FromProto(kv));
    if (!resp.more() || resp.kvs().empty()) break;
    from = resp.kvs(resp.kvs_size() - 1).key() + std::string(1, '\0');
  }
  if (revision) *revision = at;
  return out;
}

StatusOr<std::optional<EtcdKv>> EtcdClient::Get(const std::string& key) {
  pb::RangeRequest req;
  req.set_key(key);
  pb::RangeResponse resp;
  HVD_RETURN_IF_ERROR(
      impl_->Unary("get", [&](Impl::Member& m, grpc::ClientContext& ctx) {
        return m.kv->Range(&ctx, req, &resp);
      }));
  if (resp.kvs().empty()) return std::optional<EtcdKv>();
  return std::optional<EtcdKv>(FromProto(resp.kvs(0)));
}

StatusOr<EtcdTxnResult> EtcdClient::Txn(
    const std::vector<EtcdCompare>& compares, const std::vector<EtcdOp>& then,
    const std::vector<EtcdOp>& otherwise) {
  pb::TxnRequest req;
  for (const EtcdCompare& c : compares) ToProto(c, req.add_compare());
  for (const EtcdOp& op : then) ToProto(op, req.add_success());
  for (const EtcdOp& op : otherwise) ToProto(op, req.add_failure());
  pb::TxnResponse resp;
  HVD_RETURN_IF_ERROR(
      impl_->Unary("txn", [&](Impl::Member& m, grpc::ClientContext& ctx) {
        return m.kv->Txn(&ctx, req, &resp);
      }));
  EtcdTxnResult out;
  out.succeeded = resp.succeeded();
  out.revision = resp.header().revision();
  for (const pb::ResponseOp& r : resp.responses()) {
    if (!r.has_response_range()) continue;
    const pb::RangeResponse& range = r.response_range();
    out.gets.push_back(range.kvs().empty()
                           ? std::optional<EtcdKv>()
                           : std::optional<EtcdKv>(FromProto(range.kvs(0))));
  }
  return out;
}

StatusOr<int64_t> EtcdClient::GrantLease(int64_t ttl_seconds) {
  pb::LeaseGrantRequest req;
  req.set_ttl(ttl_seconds);
  pb::LeaseGrantResponse resp;
  HVD_RETURN_IF_ERROR(impl_->Unary(
      "grant a lease", [&](Impl::Member& m, grpc::ClientContext& ctx) {
        return m.lease->LeaseGrant(&ctx, req, &resp);
      }));
  if (!resp.error().empty()) {
    return Status::Unavailable("etcd: grant a lease", resp.error());
  }
  return resp.id();
}

Status EtcdClient::KeepAlive(int64_t lease) {
  int64_t ttl = 0;
  HVD_RETURN_IF_ERROR(impl_->Unary(
      "renew the lease", [&](Impl::Member& m, grpc::ClientContext& ctx) {
        std::unique_ptr<grpc::ClientReaderWriter<pb::LeaseKeepAliveRequest,
                                                 pb::LeaseKeepAliveResponse>>
            stream = m.lease->LeaseKeepAlive(&ctx);
        pb::LeaseKeepAliveRequest req;
        req.set_id(lease);
        pb::LeaseKeepAliveResponse resp;
        // The answer is read before the stream is closed: etcd may drop an
        // answer still queued when the client's side ends.
        const bool answered = stream->Write(req) && stream->Read(&resp);
        if (answered) ttl = resp.ttl();
        stream->WritesDone();
        ctx.TryCancel();
        const grpc::Status s = stream->Finish();
        if (answered) return grpc::Status::OK;
        return s.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                     "the keep-alive stream ended")
                      : s;
      }));
  if (ttl <= 0) {
    return Status::NotFound("etcd",
                            "lease " + std::to_string(lease) + " has expired");
  }
  return Status::Ok();
}

Status EtcdClient::RevokeLease(int64_t lease) {
  pb::LeaseRevokeRequest req;
  req.set_id(lease);
  pb::LeaseRevokeResponse resp;
  return impl_->Unary("revoke the lease",
                      [&](Impl::Member& m, grpc::ClientContext& ctx) {
                        return m.lease->LeaseRevoke(&ctx, req, &resp);
                      });
}

void EtcdClient::WatchForDelete(const std::string& key, int64_t after,
                                SteadyClock::time_point until) {
  Impl::Member& m = impl_->CurrentMember();
  grpc::ClientContext ctx;
  ctx.set_deadline(
      std::chrono::system_clock::now() +
      std::max<SteadyClock::duration>(until - SteadyClock::now(), {}));
  if (std::string token = impl_->Token(); !token.empty()) {
    ctx.AddMetadata("token", token);
  }
  auto stream = m.watch->Watch(&ctx);
  pb::WatchRequest req;
  pb::WatchCreateRequest* create = req.mutable_create_request();
  create->set_key(key);
  create->set_start_revision(after + 1);
  pb::WatchResponse resp;
  bool deleted = false;
  if (stream->Write(req)) {
    while (!deleted && stream->Read(&resp)) {
      if (resp.canceled() || resp.compact_revision() > 0) break;
      for (const pb::Event& e : resp.events()) {
        if (e.type() == pb::Event::DELETE) deleted = true;
      }
    }
  }
  ctx.TryCancel();
  (void)stream->Finish();
}

StatusOr<std::vector<std::string>> ParseEtcdUrl(const std::string& url) {
  constexpr std::string_view kScheme = "etcd://";
  if (url.rfind(kScheme, 0) != 0) {
    return Status::InvalidArgument(
        "--store", "'" + url +
                       "' is not a store hvd-rendezvousd knows; use "
                       "etcd://HOST:PORT[,HOST:PORT...]");
  }
  HVD_ASSIGN_OR_RETURN(
      std::vector<HostPort> members,
      ParseHostPortList(std::string_view(url).substr(kScheme.size()),
                        "--store"));
  std::vector<std::string> out;
  for (const HostPort& hp : members) out.push_back(hp.ToString());
  return out;
}

}  // namespace hvd::rendezvous::store
