#include "launcher/flags.h"

namespace hvd::launcher {
namespace {

constexpr int64_t kBig = 1LL << 40;

FlagSpec Int(std::vector<std::string> names, std::string key, int64_t min,
             int64_t max, std::string group, std::string help,
             std::string yaml = "", std::string env = "") {
  FlagSpec f;
  f.names = std::move(names);
  f.key = std::move(key);
  f.kind = FlagKind::kInt;
  f.min = min;
  f.max = max;
  f.group = std::move(group);
  f.help = std::move(help);
  f.yaml = std::move(yaml);
  f.env = std::move(env);
  f.metavar = "N";
  return f;
}

FlagSpec Dbl(std::vector<std::string> names, std::string key, double min,
             double max, std::string group, std::string help,
             std::string yaml = "", std::string env = "") {
  FlagSpec f = Int(std::move(names), std::move(key), 0, 0, std::move(group),
                   std::move(help), std::move(yaml), std::move(env));
  f.kind = FlagKind::kDouble;
  f.dmin = min;
  f.dmax = max;
  f.metavar = "X";
  return f;
}

FlagSpec Str(std::vector<std::string> names, std::string key,
             std::string metavar, std::string group, std::string help,
             std::string yaml = "", std::string env = "") {
  FlagSpec f = Int(std::move(names), std::move(key), 0, 0, std::move(group),
                   std::move(help), std::move(yaml), std::move(env));
  f.kind = FlagKind::kString;
  f.metavar = std::move(metavar);
  return f;
}

FlagSpec Switch(std::vector<std::string> names, std::string key,
                std::string group, std::string help, std::string yaml = "",
                std::string env = "") {
  FlagSpec f = Int(std::move(names), std::move(key), 0, 0, std::move(group),
                   std::move(help), std::move(yaml), std::move(env));
  f.kind = FlagKind::kSwitch;
  f.metavar = "";
  return f;
}

std::vector<FlagSpec> Build() {
  const std::string kGeneral = "general";
  const std::string kHosts = "hosts";
  const std::string kSsh = "SSH";
  const std::string kRdv = "rendezvous (default: one embedded in horovodrun)";
  const std::string kTune = "tuning";
  const std::string kAuto = "autotune";
  const std::string kTimeline = "timeline";
  const std::string kStall = "stall check";
  const std::string kLib = "library";
  const std::string kLog = "logging and output";
  std::vector<FlagSpec> t = {
      Int({"-np", "--num-proc", "-n"}, "num_proc", 1, 1 << 20, kGeneral,
          "number of processes to run (required)"),
      Switch({"-h", "--help"}, "help", kGeneral, "show this help and exit"),
      Switch({"-v", "--version"}, "version", kGeneral,
             "show the version and exit"),
      Switch({"-cb", "--check-build"}, "check_build", kGeneral,
             "list the controllers and tensor operations built in, and exit"),
      Str({"--config-file"}, "config_file", "FILE", kGeneral,
          "YAML file of settings (sections params, autotune, timeline, "
          "stall_check, library_options, logging); a flag on the command "
          "line wins"),
      Switch({"--gloo"}, "gloo", kGeneral, "run on Gloo (the default)"),
      Switch({"--mpi"}, "mpi", kGeneral, "not supported: hvd runs on Gloo"),
      Switch({"--verbose"}, "verbose", kGeneral, "say what the launcher does"),
      Int({"--start-timeout"}, "start_timeout", 1, 86400, kGeneral,
          "seconds for every worker to start and join (30, or "
          "HOROVOD_START_TIMEOUT)"),
      Str({"-H", "--hosts"}, "hosts", "H:S,...", kHosts,
          "hosts and slots, e.g. a:2,b:4, [::1]:2, user@c:1 (default "
          "localhost:NP)"),
      Str({"--hostfile"}, "hostfile", "FILE", kHosts,
          "host file: lines 'host slots=N' (max_slots= accepted, # comments)"),
      Str({"--network-interface"}, "network_interface", "IF", kHosts,
          "interface for Gloo traffic and the advertised rendezvous address "
          "(repeatable)",
          "", "HOROVOD_GLOO_IFACE"),
      Int({"-p", "--ssh-port"}, "ssh_port", 1, 65535, kSsh,
          "SSH port of the remote hosts (22)"),
      Str({"-i", "--ssh-identity-file"}, "ssh_identity_file", "FILE", kSsh,
          "private key for SSH (default: ssh-agent, then ~/.ssh/id_*)"),
      Str({"--ssh-host-key-check"}, "ssh_host_key_check", "POLICY", kSsh,
          "strict, accept-new (default: add unknown hosts to known_hosts, "
          "refuse changed keys) or off"),
      Str({"--rendezvous-addr"}, "rendezvous_addr", "HOST:PORT", kRdv,
          "use a running hvd-rendezvousd"),
      Str({"--rendezvous-token-file"}, "rendezvous_token_file", "FILE", kRdv,
          "file with the daemon's admin token"),
      Str({"--rendezvous-tls-ca"}, "rendezvous_tls_ca", "FILE", kRdv,
          "CA that signed the daemon's certificate"),
      Str({"--rendezvous-tls-cert"}, "rendezvous_tls_cert", "FILE", kRdv,
          "client certificate, for mutual TLS"),
      Str({"--rendezvous-tls-key"}, "rendezvous_tls_key", "FILE", kRdv,
          "its private key"),
      Int({"--fusion-threshold-mb"}, "fusion_threshold_mb", 0, 1 << 20, kTune,
          "tensor fusion buffer size in MB (128)", "params.fusion_threshold_mb",
          "HOROVOD_FUSION_THRESHOLD"),
      Dbl({"--cycle-time-ms"}, "cycle_time_ms", 0, 1e6, kTune,
          "pace cycles this many ms apart, batching what arrives between "
          "them, as Horovod does (0: start each at once; the default)",
          "params.cycle_time_ms", "HOROVOD_CYCLE_TIME"),
      Int({"--cache-capacity"}, "cache_capacity", 0, kBig, kTune,
          "response cache entries, 0 disables (1024)", "params.cache_capacity",
          "HOROVOD_CACHE_CAPACITY"),
      Switch({"--disable-cache"}, "disable_cache", kTune,
             "disable the response cache (same as --cache-capacity 0)"),
      Switch({"--hierarchical-allreduce"}, "hierarchical_allreduce", kTune,
             "reduce within hosts, then across them",
             "params.hierarchical_allreduce", "HOROVOD_HIERARCHICAL_ALLREDUCE"),
      Switch({"--no-hierarchical-allreduce"}, "no_hierarchical_allreduce",
             kTune, "pin hierarchical allreduce off (autotune leaves it)"),
      Switch({"--hierarchical-allgather"}, "hierarchical_allgather", kTune,
             "gather within hosts, then across them",
             "params.hierarchical_allgather", "HOROVOD_HIERARCHICAL_ALLGATHER"),
      Switch({"--no-hierarchical-allgather"}, "no_hierarchical_allgather",
             kTune, "pin hierarchical allgather off (autotune leaves it)"),
      Switch({"--autotune"}, "autotune", kAuto,
             "tune fusion threshold and cycle time while training",
             "autotune.enabled", "HOROVOD_AUTOTUNE"),
      Str({"--autotune-log-file"}, "autotune_log_file", "FILE", kAuto,
          "CSV of every sample, best values last", "autotune.log_file",
          "HOROVOD_AUTOTUNE_LOG"),
      Int({"--autotune-warmup-samples"}, "autotune_warmup_samples", 0, 1 << 20,
          kAuto, "samples discarded first (3)", "autotune.warmup_samples",
          "HOROVOD_AUTOTUNE_WARMUP_SAMPLES"),
      Int({"--autotune-steps-per-sample"}, "autotune_steps_per_sample", 1,
          1 << 20, kAuto, "steps scored per sample (10)",
          "autotune.steps_per_sample", "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE"),
      Int({"--autotune-bayes-opt-max-samples"},
          "autotune_bayes_opt_max_samples", 1, 1 << 20, kAuto,
          "Bayesian optimisation samples (20)",
          "autotune.bayes_opt_max_samples",
          "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES"),
      Dbl({"--autotune-gaussian-process-noise"},
          "autotune_gaussian_process_noise", 0, 1, kAuto,
          "noise of the Gaussian process, in [0, 1] (0.8)",
          "autotune.gaussian_process_noise",
          "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE"),
      Str({"--timeline-filename"}, "timeline_filename", "FILE", kTimeline,
          "write a Chrome trace of every tensor's phases (rank 0)",
          "timeline.filename", "HOROVOD_TIMELINE"),
      Switch({"--timeline-mark-cycles"}, "timeline_mark_cycles", kTimeline,
             "mark each engine cycle in the timeline", "timeline.mark_cycles",
             "HOROVOD_TIMELINE_MARK_CYCLES"),
      Switch({"--no-stall-check"}, "no_stall_check", kStall,
             "do not warn about tensors some ranks never submit"),
      Int({"--stall-check-warning-time-seconds"},
          "stall_check_warning_time_seconds", 1, 86400 * 7, kStall,
          "warn after this many seconds (60)",
          "stall_check.warning_time_seconds",
          "HOROVOD_STALL_CHECK_TIME_SECONDS"),
      Int({"--stall-check-shutdown-time-seconds"},
          "stall_check_shutdown_time_seconds", 0, 86400 * 7, kStall,
          "end the job after this many seconds of stall; 0 never (0)",
          "stall_check.shutdown_time_seconds",
          "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"),
      Int({"--gloo-timeout-seconds"}, "gloo_timeout_seconds", 1, 86400, kLib,
          "seconds a collective may wait for a peer (30)",
          "library_options.gloo_timeout_seconds",
          "HOROVOD_GLOO_TIMEOUT_SECONDS"),
      Int({"--num-nccl-streams"}, "num_nccl_streams", 1, 64, kLib,
          "NCCL streams per GPU (1)", "library_options.num_nccl_streams",
          "HOROVOD_NUM_NCCL_STREAMS"),
      Str({"--thread-affinity"}, "thread_affinity", "CORES", kLib,
          "cores for the background threads, one per local rank (e.g. 0,8)",
          "library_options.thread_affinity", "HOROVOD_THREAD_AFFINITY"),
      // Not Horovod's: mpirun's --bind-to, whose default ours follows.
      Str({"--bind-to"}, "bind_to", "CORE|NONE", kLib,
          "core: each local rank keeps to its share of the host's CPUs "
          "(as mpirun; the default where all ranks share a host and "
          "shared memory); none: the kernel places them",
          "library_options.bind_to", "HVD_BIND_TO"),
      Str({"--log-level"}, "log_level", "LEVEL", kLog,
          "TRACE, DEBUG, INFO, WARNING, ERROR or FATAL (WARNING)",
          "logging.level", "HOROVOD_LOG_LEVEL"),
      Switch({"--log-without-timestamp"}, "log_without_timestamp", kLog,
             "log lines without timestamps"),
      Switch({"--prefix-output-with-timestamp"}, "prefix_output_with_timestamp",
             kLog, "put a timestamp in front of every line of output"),
      Str({"--output-filename"}, "output_filename", "DIR", kLog,
          "also write DIR/rank.N/stdout and stderr"),
  };
  for (FlagSpec& f : t) {
    if (f.key == "log_level") {
      f.kind = FlagKind::kChoice;
      f.choices = {"TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "FATAL"};
    } else if (f.key == "ssh_host_key_check") {
      f.kind = FlagKind::kChoice;
      f.choices = {"STRICT", "ACCEPT-NEW", "OFF"};
    } else if (f.key == "bind_to") {
      f.kind = FlagKind::kChoice;
      f.choices = {"CORE", "NONE"};
    } else if (f.key == "thread_affinity") {
      f.kind = FlagKind::kIntList;
    } else if (f.key == "network_interface") {
      f.repeatable = true;
    }
  }
  return t;
}

}  // namespace

const std::vector<FlagSpec>& FlagTable() {
  static const std::vector<FlagSpec> table = Build();
  return table;
}

const FlagSpec* FindFlag(const std::string& name) {
  for (const FlagSpec& f : FlagTable()) {
    for (const std::string& n : f.names) {
      if (n == name) return &f;
    }
  }
  return nullptr;
}

const FlagSpec* FindYamlKey(const std::string& section_key) {
  for (const FlagSpec& f : FlagTable()) {
    if (!f.yaml.empty() && f.yaml == section_key) return &f;
  }
  return nullptr;
}

}  // namespace hvd::launcher
