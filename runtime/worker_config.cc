#include "runtime/worker_config.h"

#include <strings.h>

#include "common/parse.h"

namespace hvd::runtime {

StatusOr<WorkerConfig> WorkerConfig::FromEnv() {
  WorkerConfig c;
  HVD_ASSIGN_OR_RETURN(int64_t start,
                       EnvInt64("HOROVOD_START_TIMEOUT", 30, 1, 86400));
  c.start_timeout = std::chrono::seconds(start);
  HVD_ASSIGN_OR_RETURN(int64_t gloo,
                       EnvInt64("HOROVOD_GLOO_TIMEOUT_SECONDS", 30, 1, 86400));
  c.gloo_timeout = std::chrono::seconds(gloo);
  if (auto iface = GetEnv("HOROVOD_GLOO_IFACE")) c.gloo_iface = *iface;
  HVD_ASSIGN_OR_RETURN(int64_t fusion, EnvInt64("HOROVOD_FUSION_THRESHOLD",
                                                128LL << 20, 0, 1LL << 40));
  c.fusion_threshold_bytes = static_cast<size_t>(fusion);
  if (auto off = GetEnv("HOROVOD_STALL_CHECK_DISABLE"); off && !off->empty()) {
    HVD_ASSIGN_OR_RETURN(bool disabled,
                         ParseBool(*off, "HOROVOD_STALL_CHECK_DISABLE"));
    c.stall_check = !disabled;
  }
  HVD_ASSIGN_OR_RETURN(
      int64_t warn,
      EnvInt64("HOROVOD_STALL_CHECK_TIME_SECONDS", 60, 1, 7 * 86400));
  c.stall_warning = std::chrono::seconds(warn);
  HVD_ASSIGN_OR_RETURN(
      int64_t stop,
      EnvInt64("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", 0, 0, 7 * 86400));
  c.stall_shutdown = std::chrono::seconds(stop);
  HVD_ASSIGN_OR_RETURN(int64_t cache,
                       EnvInt64("HOROVOD_CACHE_CAPACITY", 1024, 0, 1 << 20));
  c.cache_capacity = static_cast<size_t>(cache);
  if (auto v = GetEnv("HVD_BIND_TO"); v && !v->empty()) {
    const bool core = strcasecmp(v->c_str(), "core") == 0;
    if (!core && strcasecmp(v->c_str(), "none") != 0) {
      return Status::InvalidArgument("HVD_BIND_TO",
                                     "must be core or none (got '" + *v + "')");
    }
    c.bind = core;
  }
  if (auto v = GetEnv("HOROVOD_THREAD_AFFINITY"); v && !v->empty()) {
    HVD_ASSIGN_OR_RETURN(
        std::vector<int64_t> cpus,
        ParseIntList(*v, "HOROVOD_THREAD_AFFINITY", 0, 1 << 20));
    c.thread_affinity.assign(cpus.begin(), cpus.end());
  }
  if (auto off = GetEnv("HOROVOD_SHM_DISABLE"); off && !off->empty()) {
    HVD_ASSIGN_OR_RETURN(bool disabled, ParseBool(*off, "HOROVOD_SHM_DISABLE"));
    c.shm = !disabled;
    c.shm_given = true;
  }
  for (auto [name, field] :
       {std::pair{"HOROVOD_HIERARCHICAL_ALLREDUCE", &c.hierarchical_allreduce},
        std::pair{"HOROVOD_HIERARCHICAL_ALLGATHER",
                  &c.hierarchical_allgather}}) {
    if (auto v = GetEnv(name); v && !v->empty()) {
      HVD_ASSIGN_OR_RETURN(bool on, ParseBool(*v, name));
      *field = on;
    }
  }
  if (auto v = GetEnv("HOROVOD_AUTOTUNE"); v && !v->empty()) {
    HVD_ASSIGN_OR_RETURN(c.autotune, ParseBool(*v, "HOROVOD_AUTOTUNE"));
  }
  if (auto v = GetEnv("HOROVOD_AUTOTUNE_LOG")) c.autotune_log = *v;
  HVD_ASSIGN_OR_RETURN(
      int64_t warm, EnvInt64("HOROVOD_AUTOTUNE_WARMUP_SAMPLES", 3, 0, 1 << 20));
  HVD_ASSIGN_OR_RETURN(
      int64_t steps,
      EnvInt64("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", 10, 1, 1 << 20));
  HVD_ASSIGN_OR_RETURN(
      int64_t most,
      EnvInt64("HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", 20, 1, 1 << 20));
  c.autotune_warmup_samples = static_cast<int>(warm);
  c.autotune_steps_per_sample = static_cast<int>(steps);
  c.autotune_max_samples = static_cast<int>(most);
  if (auto v = GetEnv("HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE");
      v && !v->empty()) {
    HVD_ASSIGN_OR_RETURN(
        c.autotune_noise,
        ParseDouble(*v, "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", 0, 1));
  }
  c.fusion_given = GetEnv("HOROVOD_FUSION_THRESHOLD").has_value();
  // Where autotune starts without pinning the values (bench/run_autotune.sh
  // starts it from a poor point): "FUSION_MB,CYCLE_MS".
  if (auto v = GetEnv("HVD_AUTOTUNE_START"); v && !v->empty()) {
    size_t comma = v->find(',');
    if (comma == std::string::npos) {
      return Status::InvalidArgument("HVD_AUTOTUNE_START",
                                     "must be FUSION_MB,CYCLE_MS");
    }
    HVD_ASSIGN_OR_RETURN(
        double mb,
        ParseDouble(v->substr(0, comma), "HVD_AUTOTUNE_START", 0, 1 << 20));
    HVD_ASSIGN_OR_RETURN(double ms, ParseDouble(v->substr(comma + 1),
                                                "HVD_AUTOTUNE_START", 0, 1e6));
    c.fusion_threshold_bytes = static_cast<size_t>(mb * 1048576);
    c.cycle_time = std::chrono::microseconds(static_cast<int64_t>(ms * 1000));
  }
  c.cycle_given = GetEnv("HOROVOD_CYCLE_TIME").has_value();
  if (auto tl = GetEnv("HOROVOD_TIMELINE")) c.timeline = *tl;
  if (auto mc = GetEnv("HOROVOD_TIMELINE_MARK_CYCLES"); mc && !mc->empty()) {
    HVD_ASSIGN_OR_RETURN(c.timeline_mark_cycles,
                         ParseBool(*mc, "HOROVOD_TIMELINE_MARK_CYCLES"));
  }
  if (auto cycle = GetEnv("HOROVOD_CYCLE_TIME")) {
    HVD_ASSIGN_OR_RETURN(double ms,
                         ParseDouble(*cycle, "HOROVOD_CYCLE_TIME", 0, 1e6));
    c.cycle_time = std::chrono::microseconds(static_cast<int64_t>(ms * 1000));
  }
  if (auto addr = GetEnv("HVD_GLOO_ADDR"); addr && !addr->empty()) {
    c.gloo_addr = *addr;
  }

  auto addr = GetEnv("HVD_RENDEZVOUS_ADDR");
  if (!addr || addr->empty()) {
    HVD_ASSIGN_OR_RETURN(int64_t size, EnvInt64("HOROVOD_SIZE", 1, 1, 1 << 24));
    if (size != 1) {
      return Status::FailedPrecondition(
          "hvd::init",
          "HOROVOD_SIZE is " + std::to_string(size) +
              " but HVD_RENDEZVOUS_ADDR is not set; start the job with "
              "horovodrun");
    }
    return c;  // standalone, size 1
  }
  c.launched = true;
  c.rendezvous_addr = *addr;
  constexpr char kHint[] = "horovodrun sets it; start the job with horovodrun";
  HVD_ASSIGN_OR_RETURN(c.job_id, RequireEnv("HVD_JOB_ID", kHint));
  HVD_ASSIGN_OR_RETURN(c.job_token, RequireEnv("HVD_JOB_TOKEN", kHint));
  HVD_ASSIGN_OR_RETURN(c.host, RequireEnv("HVD_HOST", kHint));
  HVD_ASSIGN_OR_RETURN(std::string slot, RequireEnv("HVD_SLOT", kHint));
  HVD_ASSIGN_OR_RETURN(int64_t slot_n,
                       ParseInt64(slot, "HVD_SLOT", 0, 1 << 20));
  c.slot = static_cast<int>(slot_n);
  if (auto ca = GetEnv("HVD_RENDEZVOUS_TLS_CA")) c.tls_ca_pem = *ca;
  if (auto cert = GetEnv("HVD_RENDEZVOUS_TLS_CERT")) c.tls_cert_pem = *cert;
  if (auto key = GetEnv("HVD_RENDEZVOUS_TLS_KEY")) c.tls_key_pem = *key;

  if (GetEnv("HOROVOD_RANK")) {
    rendezvous::Assignment a;
    struct Field {
      const char* name;
      int* out;
    } fields[] = {{"HOROVOD_RANK", &a.rank},
                  {"HOROVOD_SIZE", &a.size},
                  {"HOROVOD_LOCAL_RANK", &a.local_rank},
                  {"HOROVOD_LOCAL_SIZE", &a.local_size},
                  {"HOROVOD_CROSS_RANK", &a.cross_rank},
                  {"HOROVOD_CROSS_SIZE", &a.cross_size}};
    for (const Field& f : fields) {
      HVD_ASSIGN_OR_RETURN(std::string v, RequireEnv(f.name, kHint));
      HVD_ASSIGN_OR_RETURN(int64_t n, ParseInt64(v, f.name, 0, 1 << 24));
      *f.out = static_cast<int>(n);
    }
    c.expected = a;
  }
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
