#include "runtime/context.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/logging.h"
#include "common/parse.h"
#include "rendezvous/client.h"
#include "rendezvous/flight_keys.h"
#include "rendezvous/members.h"
#include "runtime/affinity.h"
#include "runtime/launcher_reports.h"
#include "runtime/metrics.h"
#include "runtime/stack_dump.h"
#include "runtime/store.h"
#include "runtime/timeline.h"
#include "runtime/transport/hierarchical/hierarchical_backend.h"
#include "runtime/transport/hierarchical/host_control.h"
#include "runtime/transport/local/local.h"
#include "runtime/transport/nccl/nccl_backend.h"
#include "runtime/transport/shm/shm_backend.h"
#include "runtime/transport/tcp/gloo_backend.h"
#include "runtime/transport/tcp/tcp_control.h"
#include "runtime/transport/topology.h"

namespace hvd::runtime {
namespace {

// How long init() waits for its peers to arrive (their keys, segments
// and connections): HVD_JOIN_TIMEOUT when given, else Horovod's
// HOROVOD_GLOO_TIMEOUT_SECONDS, so that a peer that exited or is stuck in
// another generation ends the wait with its name instead of a silent hang.
std::chrono::milliseconds PeerWait(const WorkerConfig& config) {
  return config.join_timeout.count() > 0 ? config.join_timeout
                                         : config.gloo_timeout;
}

// A host's shared-memory group: this rank among its host's ranks.
ShmOptions LocalShm(const WorkerConfig& config, const rendezvous::Assignment& a,
                    size_t slot_bytes) {
  ShmOptions shm;
  shm.rank = a.local_rank;
  shm.size = a.local_size;
  shm.group = config.host;
  shm.job_id = config.job_id;
  shm.slot_bytes = slot_bytes;
  shm.single_copy_bytes = config.shm_single_copy_bytes;
  shm.single_copy_limit = config.shm_single_copy_limit;
  shm.connect_timeout = PeerWait(config);
  shm.op_timeout = config.gloo_timeout;
  return shm;
}

// Gloo among `size` ranks (the job, or a cross communicator).
GlooOptions GlooFor(const WorkerConfig& config, int rank, int size) {
  GlooOptions gloo;
  gloo.rank = rank;
  gloo.size = size;
  gloo.iface = config.gloo_iface;
  gloo.hostname = config.gloo_addr;
  gloo.connect_timeout = PeerWait(config);
  gloo.op_timeout = config.gloo_timeout;
  gloo.ring = config.tcp_ring;
  gloo.ring_streams = config.tcp_streams;
  gloo.ring_stream_bytes = config.tcp_stream_bytes;
  gloo.ring_doubling_bytes = config.tcp_doubling_bytes;
  gloo.ring_halving_bytes = config.tcp_halving_bytes;
  return gloo;
}

// Per rank and round of the shared-memory control plane: a cycle's
// message usually fits in one.
constexpr size_t kControlSlotBytes = 256u << 10;
// Within a host, a tensor's data rides in the negotiation only up to 4 KiB:
// beyond that the copies into and out of the message cost more than the
// shared-memory backend's own allreduce (16 KiB: 5.0 us carried, against
// 1.6 us for the backend's call). Across hosts it saves a network trip, so
// the engine's default (16 KiB) stays.
constexpr size_t kShmEagerTensorBytes = 4u << 10;
// Two ranks over TCP: a tensor's data in the negotiation message is what the
// ring would move anyway (each rank sends the other the whole tensor, the
// ring half of it twice), in the one round trip negotiation costs already,
// so the ring's two steps and their waits go. Up to 256 KiB it wins across
// hosts (10 Gbit/s, 256 KiB: 220 us against 249 us for negotiation and the
// ring); beyond that the copies into and out of the message cost more than
// the round trip saves (1 MiB on loopback: 495 us against 364 us).
constexpr size_t kTcpPairEagerBytes = 256u << 10;

}  // namespace

Context::~Context() {
  flight_.reset();
  publisher_.reset();
  if (engine_) engine_->Shutdown();
  engine_made_.store(nullptr, std::memory_order_release);
  engine_.reset();
  // What negotiating cost this rank (tests/integration read it).
  if (control_ && control_->traffic().exchanges > 0 &&
      control_->traffic().sockets > 0) {
    const ControlPlane::Traffic t = control_->traffic();
    HVD_LOG(Debug) << "control plane: " << t.exchanges << " exchanges, "
                   << t.frames << " frames, " << t.bytes << " bytes sent, "
                   << t.sockets << " sockets, " << t.merges << " merges";
  }
  timeline_.reset();  // after the engine: it may still write events
}

Engine& Context::engine() {
  // Once made, taken without call_once, which sets thread-locals and calls
  // into libc each time (every collective asks).
  if (Engine* made = engine_made_.load(std::memory_order_acquire)) {
    return *made;
  }
  std::call_once(engine_once_, [this] {
    engine_options_.rank = assignment_.rank;
    engine_options_.size = assignment_.size;
    if (assignment_.rank == 0 && !process_set_) {
      // Rank 0 always has one, so hvd::start_timeline() can open it later;
      // HOROVOD_TIMELINE=DYNAMIC (Horovod's word) opens none at start.
      timeline_ = std::make_unique<Timeline>();
      engine_options_.timeline = timeline_.get();
      if (!timeline_path_.empty() && timeline_path_ != "DYNAMIC") {
        Status s = timeline_->Open(timeline_path_, timeline_mark_cycles_);
        if (!s.ok()) {
          HVD_LOG(Error) << s.ToString();
        }
      }
    }
    engine_ = std::make_unique<Engine>(engine_options_, backends_.get(),
                                       control_.get());
    engine_made_.store(engine_.get(), std::memory_order_release);
  });
  return *engine_;
}

Status Context::Place(const WorkerConfig& config, Transport data) {
  const rendezvous::Assignment& a = assignment_;
  if (!config.thread_affinity.empty()) {
    if (static_cast<int>(config.thread_affinity.size()) < a.local_size) {
      return Status::InvalidArgument(
          "HOROVOD_THREAD_AFFINITY",
          "lists " + std::to_string(config.thread_affinity.size()) +
              " CPUs but host " + config.host + " runs " +
              std::to_string(a.local_size) +
              " ranks; give one CPU per local rank (e.g. 0,1)");
    }
    engine_options_.thread_cpu = config.thread_affinity[a.local_rank];
  }
  auto allowed = AllowedCpus();
  // Where ranks outnumber CPUs, a rank's wake-up of a peer's engine thread
  // must take a CPU from another rank at once; otherwise its own callers
  // are all the engine thread would preempt (Engine::Loop).
  engine_options_.batch_thread =
      allowed.ok() && a.local_size <= static_cast<int>(allowed->size());
  const bool shm_data = data == Transport::kShm;
  if (!config.bind.value_or(shm_data) || a.local_size < 2) {
    return Status::Ok();
  }
  if (!allowed.ok()) {
    HVD_LOG(Warning) << "not binding to CPUs: " << allowed.status().ToString();
    return Status::Ok();
  }
  std::vector<int> cpus = CpuBlock(*allowed, a.local_rank, a.local_size);
  if (cpus.empty()) {
    HVD_LOG(Info) << "not binding to CPUs: " << a.local_size
                  << " local ranks share " << allowed->size() << " CPUs";
    return Status::Ok();
  }
  // Binding is a placement hint: a failure is logged, never fatal.
  if (Status s = BindProcess(cpus); !s.ok()) {
    HVD_LOG(Warning) << "not bound: " << s.ToString();
  } else {
    HVD_LOG(Debug) << "local rank " << a.local_rank << " bound to CPUs "
                   << CpuList(cpus);
  }
  return Status::Ok();
}

std::unique_ptr<Store> Context::GenerationStore(
    const std::string& prefix) const {
  return MakeRendezvousStore(client_.get(),
                             "g" + std::to_string(assignment_.generation) +
                                 "/" + store_prefix_ + prefix,
                             config_.elastic ? assignment_.generation : 0);
}

StatusOr<std::unique_ptr<Context>> Context::Create(const WorkerConfig& config,
                                                   int previous_generation) {
  if (!config.launched) {
    std::unique_ptr<Context> ctx = Blank(config);
    ctx->backends_ =
        std::make_unique<BackendSet>(CreateLocalBackend(), "local copies");
    ctx->backends_->SetActivityPrefixes("GLOO_", "NCCL_");
    ctx->control_ = CreateLocalControlPlane();
    return ctx;
  }
  for (;;) {
    HVD_ASSIGN_OR_RETURN(std::unique_ptr<Context> ctx,
                         Join(config, previous_generation));
    Status connected = ctx->Connect(config);
    // An elastic job's membership moved on while this rank met its peers:
    // they have gone on to the next generation (or are gone), so it follows
    // them instead of failing at its timeout.
    if (!connected.ok() && config.elastic && ctx->MembershipChanged()) {
      HVD_LOG(Info) << "generation " << ctx->assignment_.generation
                    << " was superseded while meeting its peers ("
                    << connected.ToString() << "); joining the next";
      previous_generation = ctx->assignment_.generation;
      continue;
    }
    HVD_RETURN_IF_ERROR(ctx->Explained(connected));
    ctx->StartReports(config);
    return ctx;
  }
}

std::unique_ptr<Context> Context::Blank(const WorkerConfig& config) {
  std::unique_ptr<Context> ctx(new Context());
  ctx->config_ = config;
  ctx->engine_options_ = config.engine;
  ctx->timeline_path_ = config.timeline;
  ctx->timeline_mark_cycles_ = config.timeline_mark_cycles;
  return ctx;
}

StatusOr<std::unique_ptr<Context>> Context::Join(const WorkerConfig& config,
                                                 int previous_generation) {
  std::unique_ptr<Context> ctx = Blank(config);
  ctx->client_ = rendezvous::RendezvousClient::Create(
      config.rendezvous_addr, config.job_id, config.job_token,
      rendezvous::ClientTls{config.tls_ca_pem, config.tls_cert_pem,
                            config.tls_key_pem});
  // A re-join of an elastic job waits for the launcher's next membership,
  // which may take until --elastic-timeout; in a fixed job it answers at
  // once either way.
  const auto join_timeout =
      previous_generation > 0
          ? std::max(config.start_timeout, config.elastic_timeout)
          : config.start_timeout;
  auto joined = ctx->client_->Join(config.host, config.slot, join_timeout,
                                   previous_generation);
  if (!joined.ok()) {
    return joined.status().WithContext("host " + config.host + " slot " +
                                       std::to_string(config.slot));
  }
  ctx->assignment_ = *joined;
  HVD_RETURN_IF_ERROR(CheckAssignment(config, ctx->assignment_));
  return ctx;
}

void Context::StartReports(const WorkerConfig& config) {
  const rendezvous::Assignment& a = assignment_;
  Context* raw = this;
  flight_ = std::make_unique<FlightResponder>(
      client_, config.host, config.slot, [raw] {
        const Engine* made = raw->engine_made_.load(std::memory_order_acquire);
        // No engine yet: no collective either.
        const int rank = raw->assignment_.rank;
        const std::string& host = raw->config_.host;
        const std::string stacks = DumpStacks();
        return made ? made->flight_recorder().ToJson(rank, host, stacks)
                    : FlightRecorder(0, 0).ToJson(rank, host, stacks);
      });
  engine_options_.stall.ask_dump =
      AskForFlightDumps(client_, a.generation, a.rank);
  // The engine calls it from its thread while the context (its owner)
  // lives; the record must be set before the callers learn of the failure
  // and exit.
  engine_options_.on_collectives_failed = [raw] {
    const Engine* made = raw->engine_made_.load(std::memory_order_acquire);
    if (made == nullptr) return;
    (void)raw->client_->Set(
        rendezvous::FlightLastKey(raw->config_.host, raw->config_.slot),
        made->flight_recorder().ToJson(raw->assignment_.rank,
                                       raw->config_.host));
  };
  if (config.metrics_interval.count() > 0) {
    publisher_ = std::make_unique<MetricsPublisher>(
        client_,
        std::string(rendezvous::kMetricsKeyPrefix) + config.host + "/" +
            std::to_string(config.slot),
        metrics::Labels{{"rank", std::to_string(a.rank)},
                        {"host", config.host},
                        {"job", config.job_id}},
        config.metrics_interval,
        std::string(rendezvous::kArrivalsKeyPrefix) + config.host + "/" +
            std::to_string(config.slot),
        [raw] {
          const Engine* made =
              raw->engine_made_.load(std::memory_order_acquire);
          // A step's worth for many models, published every interval.
          constexpr size_t kArrivals = 1000;
          return made ? std::to_string(raw->assignment_.rank) + " " +
                            raw->config_.host + "\n" +
                            made->flight_recorder().Arrivals(kArrivals)
                      : std::string();
        });
  }
}

bool Context::MembershipChanged() const {
  if (!client_ || process_set_) return false;
  auto epoch = client_->Get(rendezvous::kMembershipEpochKey);
  if (!epoch.ok()) return false;  // NotFound: a fixed job
  auto n = ParseInt64(*epoch, rendezvous::kMembershipEpochKey, 0, INT32_MAX);
  return n.ok() && *n > assignment_.generation;
}

StatusOr<std::unique_ptr<Context>> Context::CreateProcessSet(
    int id, const std::vector<int>& ranks) const {
  const std::string where = "process set " + std::to_string(id);
  auto me = std::find(ranks.begin(), ranks.end(), assignment_.rank);
  if (me == ranks.end()) {
    return Status::InvalidArgument(
        where, "rank " + std::to_string(assignment_.rank) + " is not in it");
  }
  std::unique_ptr<Context> ctx(new Context());
  ctx->config_ = config_;
  ctx->process_set_ = true;
  ctx->store_prefix_ = "ps" + std::to_string(id) + "/";
  ctx->engine_options_ = config_.engine;
  ctx->engine_options_.process_set = id;
  // Autotune tunes the job's engine; a set's keeps the settings given.
  ctx->engine_options_.autotune = false;
  ctx->client_ = client_;
  rendezvous::Assignment a;
  a.rank = static_cast<int>(me - ranks.begin());
  a.size = static_cast<int>(ranks.size());
  a.gpu = assignment_.gpu;
  a.generation = assignment_.generation;
  if (!client_) {  // a process on its own: the set is itself
    ctx->assignment_ = a;
    ctx->backends_ =
        std::make_unique<BackendSet>(CreateLocalBackend(), "local copies");
    ctx->backends_->SetActivityPrefixes("GLOO_", "NCCL_");
    ctx->control_ = CreateLocalControlPlane();
    return ctx;
  }
  // Local and cross ranks among the members: each says its host.
  ctx->assignment_ = a;
  std::unique_ptr<Store> store = ctx->GenerationStore("hosts/");
  HVD_RETURN_IF_ERROR(store->Set(std::to_string(a.rank), config_.host));
  std::vector<std::string> keys;
  for (int r = 0; r < a.size; ++r) keys.push_back(std::to_string(r));
  auto waited = store->Wait(keys, PeerWait(config_));
  if (!waited.ok()) return Explained(waited.status());
  const std::vector<std::string>& hosts = *waited;
  std::vector<std::string> order;  // hosts by first member
  std::vector<int> local_rank(a.size), per_host;
  for (int r = 0; r < a.size; ++r) {
    auto it = std::find(order.begin(), order.end(), hosts[r]);
    if (it == order.end()) {
      order.push_back(hosts[r]);
      per_host.push_back(0);
      it = order.end() - 1;
    }
    local_rank[r] = per_host[it - order.begin()]++;
  }
  const size_t host = static_cast<size_t>(
      std::find(order.begin(), order.end(), config_.host) - order.begin());
  ctx->assignment_.local_rank = local_rank[a.rank];
  ctx->assignment_.local_size = per_host[host];
  // As ComputeAssignments: for local rank L, the hosts with a member L.
  int cross_rank = 0, cross_size = 0;
  for (size_t h = 0; h < order.size(); ++h) {
    if (per_host[h] > ctx->assignment_.local_rank) {
      if (h < host) ++cross_rank;
      ++cross_size;
    }
  }
  ctx->assignment_.cross_rank = cross_rank;
  ctx->assignment_.cross_size = cross_size;
  HVD_RETURN_IF_ERROR(Explained(ctx->Connect(config_)));
  return ctx;
}

Status Context::Explained(Status s) const {
  if (s.code() != StatusCode::kDeadlineExceeded &&
      s.code() != StatusCode::kUnavailable) {
    return s;
  }
  if (!client_ || process_set_) return s;
  auto text = client_->Get(rendezvous::kMembersKey);
  if (!text.ok()) return s;
  auto members = rendezvous::ParseMembers(*text);
  if (!members.ok()) return s;
  return Status(s.code(),
                s.message() + "; waited for the job's ranks: " +
                    rendezvous::DescribeMembersFor(*members, assignment_.rank,
                                                   assignment_.generation));
}

Status Context::Connect(const WorkerConfig& config) {
  const rendezvous::Assignment& a = assignment_;
  TopologyFacts facts;
  facts.size = a.size;
  facts.local_size = a.local_size;
  facts.shm = config.shm;
  facts.shm_given = config.shm_given;
  facts.autotune = config.engine.autotune;
  facts.hierarchical_allreduce = config.hierarchical_allreduce;
  facts.hierarchical_allgather = config.hierarchical_allgather;
  const TransportPlan plan = PlanTransports(facts);
  if (!process_set_) HVD_RETURN_IF_ERROR(Place(config, plan.data));

  // CUDA tensors: NCCL, made on the first one.
  NcclOptions nccl;
  nccl.rank = a.rank;
  nccl.size = a.size;
  nccl.device = std::max(a.gpu, 0);
  nccl.streams = config.num_nccl_streams;
  DeviceBackendFactory device =
      MakeDeviceBackendFactory(nccl, GenerationStore("nccl/"));
  const int cuda_devices = device ? CudaDeviceCount() : 0;

  std::unique_ptr<Backend> host;
  std::string host_name = TransportName(plan.data);
  BackendFactory alternative;
  switch (plan.data) {
    case Transport::kLocal:
      host = CreateLocalBackend();
      control_ = CreateLocalControlPlane();
      break;
    case Transport::kShm: {
      std::unique_ptr<Store> shm_store = GenerationStore("shm/");
      HVD_ASSIGN_OR_RETURN(
          host, CreateShmBackend(LocalShm(config, a, config.shm_slot_bytes),
                                 *shm_store));
      std::unique_ptr<Store> control_store = GenerationStore("control/");
      HVD_ASSIGN_OR_RETURN(control_, CreateShmControlPlane(
                                         LocalShm(config, a, kControlSlotBytes),
                                         *control_store));
      engine_options_.eager_tensor_bytes =
          std::min(engine_options_.eager_tensor_bytes, kShmEagerTensorBytes);
      if (engine_options_.autotune && config.shm_single_copy_bytes > 0) {
        engine_options_.tune.try_single_copy = true;
      }
      if (plan.tcp_alternative && engine_options_.autotune) {
        // Autotune may try the TCP path instead; its Gloo context is made
        // only then (by every rank in the same cycle).
        engine_options_.tune.try_shm = true;
        Context* raw = this;
        const GlooOptions gloo = GlooFor(config, a.rank, a.size);
        alternative = [raw, gloo]() -> StatusOr<std::unique_ptr<Backend>> {
          return CreateGlooBackend(gloo, raw->GenerationStore("gloo/"));
        };
      }
      break;
    }
    case Transport::kTcp: {
      const GlooOptions gloo = GlooFor(config, a.rank, a.size);
      HVD_ASSIGN_OR_RETURN(host,
                           CreateGlooBackend(gloo, GenerationStore("gloo/")));
      HVD_ASSIGN_OR_RETURN(host,
                           MaybeHierarchical(config, plan, std::move(host)));
      if (config.hierarchical_allreduce.value_or(false) && hosts_even_ &&
          device) {
        // CUDA tensors too, but only when asked: NCCL's own communicator
        // already takes NVLink inside a host and rings or trees across
        // hosts.
        nccl.hierarchical_allreduce = true;
        nccl.local_rank = a.local_rank;
        nccl.local_size = a.local_size;
        nccl.cross_rank = a.cross_rank;
        device = MakeDeviceBackendFactory(nccl, GenerationStore("nccl/"));
      }
      if (a.size == 2) {
        engine_options_.eager_tensor_bytes =
            std::max(engine_options_.eager_tensor_bytes, kTcpPairEagerBytes);
        engine_options_.eager_cycle_bytes =
            std::max(engine_options_.eager_cycle_bytes, kTcpPairEagerBytes);
      }
      if (engine_options_.autotune && config.tcp_ring &&
          config.tcp_streams > 1) {
        engine_options_.tune.try_streams = true;
      }
      if (engine_options_.autotune && config.tcp_ring &&
          (config.tcp_doubling_bytes > 0 || config.tcp_halving_bytes > 0)) {
        engine_options_.tune.try_crossovers = true;
      }
      HVD_ASSIGN_OR_RETURN(control_, TcpControl(config, gloo));
      break;
    }
  }
  backends_ = std::make_unique<BackendSet>(
      std::move(host), host_name, std::move(alternative), "Gloo over TCP",
      std::move(device), cuda_devices);
  // Horovod's timeline names: CPU operations as Gloo's, GPU ones as NCCL's.
  backends_->SetActivityPrefixes("GLOO_", "NCCL_");
  return Status::Ok();
}

StatusOr<std::unique_ptr<ControlPlane>> Context::TcpControl(
    const WorkerConfig& config, const TcpOptions& job) {
  const rendezvous::Assignment& a = assignment_;
  ControlOptions control;
  // Where to listen and how long to wait, as Gloo; sockets of its own.
  static_cast<TcpOptions&>(control) = job;
  // Every rank knows alike whether the job spans hosts (some rank is not
  // on this one), so every rank takes the same plane.
  const bool hosts = a.local_size < a.size;
  if (!hosts || !config.shm || !config.control_host_leaders) {
    control.exchange = ChooseControlExchange(a.size, config.control_mesh_ranks);
    std::unique_ptr<Store> store = GenerationStore("control/");
    return CreateTcpControlPlane(control, *store);
  }
  HostControlOptions o;
  o.local = LocalShm(config, a, kControlSlotBytes);
  // A rank of the host waits on its leader while the leaders exchange:
  // the leader's own timeout must name the silent host first.
  o.local.op_timeout = 2 * config.gloo_timeout + std::chrono::seconds(10);
  o.local.share_cpus = true;
  o.job = job;
  o.cross = control;
  o.cross.rank = a.cross_rank;
  o.cross.size = a.cross_size;
  o.cross.exchange =
      ChooseControlExchange(a.cross_size, config.control_mesh_ranks);
  std::unique_ptr<Store> store = GenerationStore("hcontrol/");
  return CreateHostControlPlane(o, *store);
}

StatusOr<std::unique_ptr<Backend>> Context::MaybeHierarchical(
    const WorkerConfig& config, const TransportPlan& plan,
    std::unique_ptr<Backend> flat) {
  if (!plan.want_hierarchical_allreduce && !plan.want_hierarchical_allgather) {
    return flat;
  }
  const rendezvous::Assignment& a = assignment_;
  // Every rank must come to the same decision: they compare local sizes.
  std::vector<int32_t> sizes(a.size);
  int32_t mine = a.local_size;
  HVD_RETURN_IF_ERROR(flat->Allgatherv(
      &mine, sizes.data(), std::vector<size_t>(a.size, sizeof(int32_t))));
  const HierarchyDecision h = DecideHierarchy(plan, sizes);
  if (!h.why_not.empty()) {
    if (a.rank == 0 && plan.hierarchical_asked) {
      HVD_LOG(Warning) << "hierarchical collectives off: " << h.why_not
                       << "; using the flat ring over all ranks";
    } else if (a.rank == 0) {
      HVD_LOG(Info) << "hierarchical collectives off: " << h.why_not;
    }
    return flat;
  }
  hosts_even_ = true;
  std::unique_ptr<Store> shm_store = GenerationStore("hshm/");
  HVD_ASSIGN_OR_RETURN(
      std::unique_ptr<Backend> local,
      CreateShmBackend(LocalShm(config, a, config.shm_slot_bytes), *shm_store));
  // The cross communicator: the ranks with this local rank, one per host.
  const GlooOptions cross = GlooFor(config, a.cross_rank, a.cross_size);
  HVD_ASSIGN_OR_RETURN(
      std::unique_ptr<Backend> cross_backend,
      CreateGlooBackend(
          cross,
          GenerationStore("gloo-cross-" + std::to_string(a.local_rank) + "/")));
  HierarchicalOptions opts;
  opts.allreduce = h.allreduce;
  opts.allgather = h.allgather;
  opts.local_rank = a.local_rank;
  opts.local_size = a.local_size;
  opts.cross_rank = a.cross_rank;
  if (a.rank == 0) {
    HVD_LOG(Info) << "hierarchical" << (opts.allreduce ? " allreduce" : "")
                  << (opts.allgather ? " allgather" : "") << ": "
                  << a.local_size << " ranks per host over shared memory, "
                  << a.cross_size << " hosts over Gloo";
  }
  engine_options_.hierarchical_allreduce = opts.allreduce;
  engine_options_.hierarchical_allgather = opts.allgather;
  if (engine_options_.autotune) {
    engine_options_.tune.try_hierarchical_allreduce =
        !config.hierarchical_allreduce.has_value();
    engine_options_.tune.try_hierarchical_allgather =
        !config.hierarchical_allgather.has_value();
  }
  return MakeHierarchicalBackend(opts, std::move(flat), std::move(local),
                                 std::move(cross_backend));
}

Status Context::Allreduce(void* data, size_t count, DataType type,
                          bool average) {
  HVD_RETURN_IF_ERROR(
      backends_->host().Allreduce(data, count, type, ReduceOp::kSum));
  if (average && assignment_.size > 1) {
    ScaleBuffer(type, data, count, 1.0 / assignment_.size);
  }
  return Status::Ok();
}

}  // namespace hvd::runtime
