#include "rendezvous/client.h"

#include <grpcpp/grpcpp.h>

#include "proto/rendezvous.grpc.pb.h"
#include "rendezvous/grpc_status.h"

namespace hvd::rendezvous {
namespace {

namespace pb = ::hvd::rendezvous::v1;

// Unary calls that do not block on the server answer in milliseconds; this
// only bounds a server that has stopped answering.
constexpr auto kCallTimeout = std::chrono::seconds(30);
// Extra time past a server-side wait's own timeout, for the answer to travel.
constexpr auto kWaitSlack = std::chrono::seconds(5);

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address,
                                           const ClientTls& tls) {
  grpc::ChannelArguments args;
  // A worker's environment often has http_proxy set for downloads; the
  // rendezvous is never behind it.
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 64 << 20);
  std::shared_ptr<grpc::ChannelCredentials> creds =
      grpc::InsecureChannelCredentials();
  if (!tls.ca_pem.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = tls.ca_pem;
    ssl.pem_cert_chain = tls.cert_pem;
    ssl.pem_private_key = tls.key_pem;
    creds = grpc::SslCredentials(ssl);
  }
  return grpc::CreateCustomChannel(address, creds, args);
}

void SetDeadline(grpc::ClientContext& ctx, std::chrono::milliseconds timeout) {
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
}

}  // namespace

class RendezvousClient::Stub {
 public:
  Stub(const std::string& address, const ClientTls& tls)
      : stub(pb::Rendezvous::NewStub(MakeChannel(address, tls))) {}
  std::unique_ptr<pb::Rendezvous::Stub> stub;
};

RendezvousClient::RendezvousClient(std::string address, std::string job_id,
                                   std::string job_token, const ClientTls& tls)
    : address_(std::move(address)),
      job_id_(std::move(job_id)),
      job_token_(std::move(job_token)),
      stub_(std::make_unique<Stub>(address_, tls)) {}

RendezvousClient::~RendezvousClient() = default;

std::unique_ptr<RendezvousClient> RendezvousClient::Create(
    std::string address, std::string job_id, std::string job_token,
    const ClientTls& tls) {
  return std::unique_ptr<RendezvousClient>(new RendezvousClient(
      std::move(address), std::move(job_id), std::move(job_token), tls));
}

StatusOr<CreatedJob> RendezvousClient::CreateJob(
    const std::string& address, const std::string& admin_token,
    const std::vector<HostSlots>& hosts, int size,
    std::chrono::milliseconds timeout, const ClientTls& tls) {
  auto stub = pb::Rendezvous::NewStub(MakeChannel(address, tls));
  grpc::ClientContext ctx;
  SetDeadline(ctx, timeout);
  // The creator is told at once when the daemon is not there, rather
  // than waiting out the timeout for it to appear.
  ctx.set_wait_for_ready(false);
  ctx.AddMetadata(kAdminTokenMetadata, admin_token);
  pb::CreateJobRequest req;
  for (const HostSlots& h : hosts) {
    pb::HostSlots* out = req.add_hosts();
    out->set_host(h.host);
    out->set_slots(h.slots);
    out->set_gpus(h.gpus);
  }
  req.set_size(size);
  pb::CreateJobResponse resp;
  HVD_RETURN_IF_ERROR(FromGrpcStatus(stub->CreateJob(&ctx, req, &resp),
                                     "rendezvous " + address));
  return CreatedJob{resp.job_id(), resp.job_token(), resp.ttl_seconds()};
}

Status RendezvousClient::KeepAlive() {
  grpc::ClientContext ctx;
  SetDeadline(ctx, kCallTimeout);
  ctx.AddMetadata(kJobTokenMetadata, job_token_);
  pb::KeepAliveRequest req;
  req.set_job_id(job_id_);
  pb::KeepAliveResponse resp;
  return FromGrpcStatus(stub_->stub->KeepAlive(&ctx, req, &resp),
                        "rendezvous " + address_ + " keep-alive");
}

Status RendezvousClient::EndJob(const std::string& reason) {
  grpc::ClientContext ctx;
  SetDeadline(ctx, kCallTimeout);
  ctx.AddMetadata(kJobTokenMetadata, job_token_);
  pb::EndJobRequest req;
  req.set_job_id(job_id_);
  req.set_reason(reason);
  pb::EndJobResponse resp;
  return FromGrpcStatus(stub_->stub->EndJob(&ctx, req, &resp),
                        "rendezvous " + address_ + " end job");
}

StatusOr<JobInfo> RendezvousClient::GetJob() {
  grpc::ClientContext ctx;
  SetDeadline(ctx, kCallTimeout);
  ctx.AddMetadata(kJobTokenMetadata, job_token_);
  pb::GetJobRequest req;
  req.set_job_id(job_id_);
  pb::GetJobResponse resp;
  HVD_RETURN_IF_ERROR(FromGrpcStatus(stub_->stub->GetJob(&ctx, req, &resp),
                                     "rendezvous " + address_));
  JobInfo info;
  info.size = resp.size();
  info.joined.assign(resp.joined_ranks().begin(), resp.joined_ranks().end());
  return info;
}

StatusOr<Assignment> RendezvousClient::Join(const std::string& host, int slot,
                                            std::chrono::milliseconds timeout) {
  grpc::ClientContext ctx;
  SetDeadline(ctx, timeout);
  ctx.set_wait_for_ready(true);
  ctx.AddMetadata(kJobTokenMetadata, job_token_);
  pb::JoinRequest req;
  req.set_job_id(job_id_);
  req.set_host(host);
  req.set_slot(slot);
  pb::JoinResponse resp;
  HVD_RETURN_IF_ERROR(FromGrpcStatus(stub_->stub->Join(&ctx, req, &resp),
                                     "rendezvous " + address_ + " join"));
  const pb::Assignment& a = resp.assignment();
  Assignment out;
  out.rank = a.rank();
  out.size = a.size();
  out.local_rank = a.local_rank();
  out.local_size = a.local_size();
  out.cross_rank = a.cross_rank();
  out.cross_size = a.cross_size();
  out.gpu = a.gpu();
  return out;
}

Status RendezvousClient::Set(const std::string& key, const std::string& value) {
  grpc::ClientContext ctx;
  SetDeadline(ctx, kCallTimeout);
  ctx.AddMetadata(kJobTokenMetadata, job_token_);
  pb::SetRequest req;
  req.set_job_id(job_id_);
  req.set_key(key);
  req.set_value(value);
  pb::SetResponse resp;
  return FromGrpcStatus(stub_->stub->Set(&ctx, req, &resp),
                        "rendezvous " + address_ + " set '" + key + "'");
}

StatusOr<std::string> RendezvousClient::Get(const std::string& key) {
  grpc::ClientContext ctx;
  SetDeadline(ctx, kCallTimeout);
  ctx.AddMetadata(kJobTokenMetadata, job_token_);
  pb::GetRequest req;
  req.set_job_id(job_id_);
  req.set_key(key);
  pb::GetResponse resp;
  HVD_RETURN_IF_ERROR(FromGrpcStatus(stub_->stub->Get(&ctx, req, &resp),
                                     "rendezvous " + address_ + " get"));
  return std::move(*resp.mutable_value());
}

StatusOr<std::vector<std::string>> RendezvousClient::Wait(
    const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  grpc::ClientContext ctx;
  SetDeadline(ctx, timeout + kWaitSlack);
  ctx.AddMetadata(kJobTokenMetadata, job_token_);
  pb::WaitRequest req;
  req.set_job_id(job_id_);
  for (const std::string& k : keys) req.add_keys(k);
  req.set_timeout_ms(std::max<int64_t>(1, timeout.count()));
  pb::WaitResponse resp;
  HVD_RETURN_IF_ERROR(FromGrpcStatus(stub_->stub->Wait(&ctx, req, &resp),
                                     "rendezvous " + address_));
  std::vector<std::string> values;
  values.reserve(resp.values_size());
  for (std::string& v : *resp.mutable_values()) values.push_back(std::move(v));
  return values;
}

Status RendezvousClient::Barrier(const std::string& name, int rank,
                                 std::chrono::milliseconds timeout) {
  grpc::ClientContext ctx;
  SetDeadline(ctx, timeout + kWaitSlack);
  ctx.AddMetadata(kJobTokenMetadata, job_token_);
  pb::BarrierRequest req;
  req.set_job_id(job_id_);
  req.set_name(name);
  req.set_rank(rank);
  req.set_timeout_ms(std::max<int64_t>(1, timeout.count()));
  pb::BarrierResponse resp;
  return FromGrpcStatus(stub_->stub->Barrier(&ctx, req, &resp),
                        "rendezvous " + address_);
}

}  // namespace hvd::rendezvous
