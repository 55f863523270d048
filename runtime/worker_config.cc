#include "runtime/worker_config.h"

#include <optional>
#include <string_view>

#include "common/host_port.h"
#include "common/local_address.h"
#include "common/parse.h"
#include "common/setting_keys.h"
#include "common/worker_env.h"
#include "rendezvous/assignment.h"

namespace hvd::runtime {

namespace {

// The launch plumbing horovodrun sets (not tuning settings, so not in the
// settings table): the variable's value, or nullopt when unset or empty.
std::optional<std::string> Lookup(const settings::EnvMap& env,
                                  const char* name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

StatusOr<std::string> Require(const settings::EnvMap& env, const char* name,
                              std::string_view hint) {
  auto v = Lookup(env, name);
  if (!v) {
    return Status::FailedPrecondition(name, "is not set; " + std::string(hint));
  }
  return *v;
}

}  // namespace

namespace {

// This host's address that reaches the rendezvous (and so the launcher).
StatusOr<std::string> AddressTowardRendezvous(const WorkerConfig& c) {
  // (The first of several daemons: they share a network.)
  HVD_ASSIGN_OR_RETURN(
      std::vector<HostPort> rdv,
      ParseHostPortList(c.rendezvous_addr, worker_env::kRendezvousAddr));
  return LocalAddressToward(rdv.front().host);
}

// A worker mpirun started: OMPI_COMM_WORLD_RANK is its task, the plan's
// hosts say where that task belongs, and mpirun's own view (size, local
// rank) must agree with it.
Status PlaceMpiTask(const std::map<std::string, std::string>& env,
                    WorkerConfig& c) {
  auto get = [&](const char* key) { return env.at(key); };
  HVD_ASSIGN_OR_RETURN(int64_t task,
                       ParseInt64(get("OMPI_COMM_WORLD_RANK"),
                                  "OMPI_COMM_WORLD_RANK", 0, 1 << 24));
  HVD_ASSIGN_OR_RETURN(
      rendezvous::TaskPlace place,
      rendezvous::PlaceTask(get(worker_env::kTaskHosts), task));
  const std::string where =
      " but horovodrun planned rank " + std::to_string(task) + " as slot " +
      std::to_string(place.slot) + " of " + place.host + " in a job of " +
      std::to_string(place.assignment.size) +
      " (do --mpi-args change mpirun's mapping?)";
  for (auto [key, want] :
       {std::pair{"OMPI_COMM_WORLD_SIZE", place.assignment.size},
        std::pair{"OMPI_COMM_WORLD_LOCAL_RANK", place.slot}}) {
    auto it = env.find(key);
    if (it == env.end()) continue;
    HVD_ASSIGN_OR_RETURN(int64_t got, ParseInt64(it->second, key, 0, 1 << 24));
    if (got != want) {
      return Status::FailedPrecondition(
          "hvd::init",
          std::string("mpirun gave ") + key + "=" + it->second + where);
    }
  }
  c.host = place.host;
  c.slot = place.slot;
  if (!env.count(worker_env::kGlooAddr)) {
    // Gloo listens where this host reaches the launcher: an address the
    // other hosts reach too (loopback when the job is all here).
    HVD_ASSIGN_OR_RETURN(c.gloo_addr, AddressTowardRendezvous(c));
  }
  return Status::Ok();
}

// What a missing launch variable's error adds.
constexpr char kHint[] = "horovodrun sets it; start the job with horovodrun";

// The engine's and the transports' settings, from the settings table:
// each named by its typed key (common/setting_keys.h), in its type.
Status ReadEngine(const settings::Reader& read, WorkerConfig& c) {
  namespace key = settings::key;
  HVD_ASSIGN_OR_RETURN(c.start_timeout, read.Get(key::kStartTimeout));
  HVD_ASSIGN_OR_RETURN(c.join_timeout, read.Get(key::kJoinTimeout));
  HVD_ASSIGN_OR_RETURN(c.elastic_timeout, read.Get(key::kElasticTimeout));
  HVD_ASSIGN_OR_RETURN(c.elastic, read.Get(key::kElastic));
  HVD_ASSIGN_OR_RETURN(c.gloo_timeout, read.Get(key::kGlooTimeout));
  HVD_ASSIGN_OR_RETURN(c.gloo_iface, read.Get(key::kNetworkInterface));
  EngineOptions& e = c.engine;
  HVD_ASSIGN_OR_RETURN(int64_t fusion, read.Get(key::kFusionThreshold));
  e.fusion_threshold_bytes = static_cast<size_t>(fusion);
  HVD_ASSIGN_OR_RETURN(e.cycle_time, read.Get(key::kCycleTime));
  e.tune.fixed_fusion = read.Given(key::kFusionThreshold);
  e.tune.fixed_cycle = read.Given(key::kCycleTime);
  HVD_ASSIGN_OR_RETURN(bool no_stall, read.Get(key::kNoStallCheck));
  e.stall.check = !no_stall;
  HVD_ASSIGN_OR_RETURN(e.stall.warning, read.Get(key::kStallWarningTime));
  HVD_ASSIGN_OR_RETURN(e.stall.shutdown, read.Get(key::kStallShutdownTime));
  HVD_ASSIGN_OR_RETURN(int64_t flight, read.Get(key::kFlightRecorderEntries));
  e.flight_recorder_entries = static_cast<size_t>(flight);
  HVD_ASSIGN_OR_RETURN(e.disable_group_fusion,
                       read.Get(key::kDisableGroupFusion));
  HVD_ASSIGN_OR_RETURN(c.dynamic_process_sets,
                       read.Get(key::kDynamicProcessSets));
  HVD_ASSIGN_OR_RETURN(int64_t streams, read.Get(key::kNumNcclStreams));
  c.num_nccl_streams = static_cast<int>(streams);
  HVD_ASSIGN_OR_RETURN(int64_t cache, read.Get(key::kCacheCapacity));
  e.cache_capacity = static_cast<size_t>(cache);
  HVD_ASSIGN_OR_RETURN(std::string bind, read.Get(key::kBindTo));
  if (!bind.empty()) c.bind = bind == "CORE";
  HVD_ASSIGN_OR_RETURN(std::vector<int64_t> cpus,
                       read.Get(key::kThreadAffinity));
  c.thread_affinity.assign(cpus.begin(), cpus.end());
  HVD_ASSIGN_OR_RETURN(bool metrics_off, read.Get(key::kMetricsDisable));
  c.metrics = !metrics_off;
  HVD_ASSIGN_OR_RETURN(bool shm_off, read.Get(key::kShmDisable));
  c.shm = !shm_off;
  c.shm_given = read.Given(key::kShmDisable);
  HVD_ASSIGN_OR_RETURN(bool ring_off, read.Get(key::kTcpRingDisable));
  c.tcp_ring = !ring_off;
  HVD_ASSIGN_OR_RETURN(int64_t streams_tcp, read.Get(key::kTcpStreams));
  c.tcp_streams = static_cast<int>(streams_tcp);
  HVD_ASSIGN_OR_RETURN(int64_t stream_bytes, read.Get(key::kTcpStreamBytes));
  c.tcp_stream_bytes = static_cast<size_t>(stream_bytes);
  HVD_ASSIGN_OR_RETURN(int64_t doubling, read.Get(key::kTcpDoublingBytes));
  c.tcp_doubling_bytes = static_cast<size_t>(doubling);
  HVD_ASSIGN_OR_RETURN(int64_t halving, read.Get(key::kTcpHalvingBytes));
  c.tcp_halving_bytes = static_cast<size_t>(halving);
  HVD_ASSIGN_OR_RETURN(int64_t mesh_ranks, read.Get(key::kControlMeshRanks));
  c.control_mesh_ranks = mesh_ranks;
  HVD_ASSIGN_OR_RETURN(c.control_host_leaders,
                       read.Get(key::kControlHostLeaders));
  HVD_ASSIGN_OR_RETURN(int64_t single_copy,
                       read.Get(key::kShmSingleCopyThreshold));
  c.shm_single_copy_bytes = static_cast<size_t>(single_copy);
  HVD_ASSIGN_OR_RETURN(int64_t single_copy_limit,
                       read.Get(key::kShmSingleCopyLimit));
  c.shm_single_copy_limit = static_cast<size_t>(single_copy_limit);
  HVD_ASSIGN_OR_RETURN(c.hierarchical_allreduce,
                       read.Get(key::kHierarchicalAllreduce));
  HVD_ASSIGN_OR_RETURN(c.hierarchical_allgather,
                       read.Get(key::kHierarchicalAllgather));
  return Status::Ok();
}

// --autotune and where its search starts.
Status ReadAutotune(const settings::Reader& read, WorkerConfig& c) {
  namespace key = settings::key;
  EngineOptions& e = c.engine;
  HVD_ASSIGN_OR_RETURN(e.autotune, read.Get(key::kAutotune));
  HVD_ASSIGN_OR_RETURN(e.autotune_log, read.Get(key::kAutotuneLogFile));
  HVD_ASSIGN_OR_RETURN(int64_t warm, read.Get(key::kAutotuneWarmupSamples));
  HVD_ASSIGN_OR_RETURN(int64_t steps, read.Get(key::kAutotuneStepsPerSample));
  HVD_ASSIGN_OR_RETURN(int64_t most, read.Get(key::kAutotuneMaxSamples));
  e.tune.warmup_samples = static_cast<int>(warm);
  e.tune.steps_per_sample = static_cast<int>(steps);
  e.tune.max_samples = static_cast<int>(most);
  HVD_ASSIGN_OR_RETURN(e.tune.noise, read.Get(key::kAutotuneNoise));
  // A disabled cache is not an on/off choice to try.
  e.tune.try_cache = e.cache_capacity > 0;
  // Where autotune starts without pinning the values (bench/run_autotune.sh
  // starts it from a poor point): "FUSION_MB,CYCLE_MS", the search's own
  // units. A value given explicitly is the user's and wins over it.
  if (auto v = read.Text(key::kAutotuneStart)) {
    const char* what = "HVD_AUTOTUNE_START";
    size_t comma = v->find(',');
    if (comma == std::string::npos) {
      return Status::InvalidArgument(what, "must be FUSION_MB,CYCLE_MS");
    }
    const settings::Setting& f = settings::Get(key::kFusionThreshold);
    const settings::Setting& t = settings::Get(key::kCycleTime);
    HVD_ASSIGN_OR_RETURN(double mb, ParseDouble(v->substr(0, comma), what,
                                                double(f.min), double(f.max)));
    HVD_ASSIGN_OR_RETURN(
        double ms, ParseDouble(v->substr(comma + 1), what, t.dmin, t.dmax));
    const Knobs start = Knobs::AtSearchPoint(mb, ms);
    if (!e.tune.fixed_fusion) e.fusion_threshold_bytes = start.fusion_bytes;
    if (!e.tune.fixed_cycle) e.cycle_time = start.cycle_time;
  }
  return Status::Ok();
}

// Where the job is and this worker's place in it, from horovodrun's
// variables (common/worker_env.h); false for a worker no launcher
// started (a job of one).
StatusOr<bool> ReadLaunch(const settings::EnvMap& env, WorkerConfig& c) {
  auto addr = Lookup(env, worker_env::kRendezvousAddr);
  if (!addr) {
    int64_t size = 1;
    if (auto v = Lookup(env, worker_env::kSize)) {
      HVD_ASSIGN_OR_RETURN(size, ParseInt64(*v, worker_env::kSize, 1, 1 << 24));
    }
    if (size != 1) {
      return Status::FailedPrecondition(
          "hvd::init",
          "HOROVOD_SIZE is " + std::to_string(size) +
              " but HVD_RENDEZVOUS_ADDR is not set; start the job with "
              "horovodrun");
    }
    return false;  // standalone, size 1
  }
  c.launched = true;
  c.rendezvous_addr = *addr;
  HVD_ASSIGN_OR_RETURN(c.job_id, Require(env, worker_env::kJobId, kHint));
  HVD_ASSIGN_OR_RETURN(c.job_token, Require(env, worker_env::kJobToken, kHint));
  if (!Lookup(env, worker_env::kHost) && Lookup(env, worker_env::kTaskHosts) &&
      Lookup(env, "OMPI_COMM_WORLD_RANK")) {
    // Started by mpirun (horovodrun --mpi): the task's place in the plan.
    HVD_RETURN_IF_ERROR(PlaceMpiTask(env, c));
  } else {
    if (c.gloo_addr == "auto") {
      // The launcher cannot tell this host's address (--launcher-cmd):
      // the one that reaches the launcher.
      HVD_ASSIGN_OR_RETURN(c.gloo_addr, AddressTowardRendezvous(c));
    }
    HVD_ASSIGN_OR_RETURN(c.host, Require(env, worker_env::kHost, kHint));
    HVD_ASSIGN_OR_RETURN(std::string slot,
                         Require(env, worker_env::kSlot, kHint));
    HVD_ASSIGN_OR_RETURN(int64_t slot_n,
                         ParseInt64(slot, worker_env::kSlot, 0, 1 << 20));
    c.slot = static_cast<int>(slot_n);
  }
  if (auto ms = Lookup(env, worker_env::kMetricsIntervalMs)) {
    HVD_ASSIGN_OR_RETURN(
        int64_t n, ParseInt64(*ms, worker_env::kMetricsIntervalMs, 0, 3600000));
    c.metrics_interval = std::chrono::milliseconds(n);
  }
  if (auto ca = Lookup(env, worker_env::kTlsCa)) c.tls_ca_pem = *ca;
  if (auto cert = Lookup(env, worker_env::kTlsCert)) {
    c.tls_cert_pem = *cert;
  }
  if (auto key = Lookup(env, worker_env::kTlsKey)) c.tls_key_pem = *key;

  return true;
}

// The rank horovodrun planned for this worker, which the rendezvous'
// answer must match (CheckAssignment).
Status ReadPlannedRank(const settings::EnvMap& env, WorkerConfig& c) {
  // In an elastic job HOROVOD_RANK is only the rank a worker started with:
  // the membership may change before it joins, and at every reset.
  if (!c.elastic && Lookup(env, worker_env::kRank)) {
    rendezvous::Assignment a;
    struct Field {
      const char* name;
      int* out;
    } fields[] = {{worker_env::kRank, &a.rank},
                  {worker_env::kSize, &a.size},
                  {worker_env::kLocalRank, &a.local_rank},
                  {worker_env::kLocalSize, &a.local_size},
                  {worker_env::kCrossRank, &a.cross_rank},
                  {worker_env::kCrossSize, &a.cross_size}};
    for (const Field& f : fields) {
      HVD_ASSIGN_OR_RETURN(std::string v, Require(env, f.name, kHint));
      HVD_ASSIGN_OR_RETURN(int64_t n, ParseInt64(v, f.name, 0, 1 << 24));
      *f.out = static_cast<int>(n);
    }
    c.expected = a;
  }
  return Status::Ok();
}

}  // namespace

StatusOr<WorkerConfig> WorkerConfig::FromEnv(const settings::EnvMap& env) {
  WorkerConfig c;
  const settings::Reader read(env);
  HVD_RETURN_IF_ERROR(ReadEngine(read, c));
  HVD_RETURN_IF_ERROR(ReadAutotune(read, c));
  HVD_ASSIGN_OR_RETURN(c.timeline, read.Get(settings::key::kTimelineFilename));
  HVD_ASSIGN_OR_RETURN(c.timeline_mark_cycles,
                       read.Get(settings::key::kTimelineMarkCycles));
  if (auto addr = Lookup(env, worker_env::kGlooAddr)) c.gloo_addr = *addr;
  HVD_ASSIGN_OR_RETURN(bool launched, ReadLaunch(env, c));
  if (!launched) return c;
  HVD_RETURN_IF_ERROR(ReadPlannedRank(env, c));
  return c;
}

Status CheckAssignment(const WorkerConfig& config,
                       const rendezvous::Assignment& got) {
  if (!config.expected) return Status::Ok();
  const rendezvous::Assignment& want = *config.expected;
  if (want.rank != got.rank || want.size != got.size ||
      want.local_rank != got.local_rank || want.local_size != got.local_size ||
      want.cross_rank != got.cross_rank || want.cross_size != got.cross_size) {
    return Status::FailedPrecondition(
        "hvd::init",
        "the rendezvous assigned rank " + std::to_string(got.rank) + "/" +
            std::to_string(got.size) + " to " + config.host + " slot " +
            std::to_string(config.slot) + " but HOROVOD_RANK says " +
            std::to_string(want.rank) + "/" + std::to_string(want.size) +
            "; the launcher and the rendezvous disagree");
  }
  return Status::Ok();
}

}  // namespace hvd::runtime
