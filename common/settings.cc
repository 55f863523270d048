#include "common/settings.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/parse.h"

extern char** environ;

namespace hvd::settings {
namespace {

constexpr int64_t kWeek = 7 * 86400;

Setting Make(std::string key, std::vector<std::string> names, Kind kind,
             std::string env, std::string yaml, std::string group,
             std::string help) {
  Setting s;
  s.key = std::move(key);
  s.names = std::move(names);
  s.kind = kind;
  s.env = std::move(env);
  s.yaml = std::move(yaml);
  s.group = std::move(group);
  s.help = std::move(help);
  switch (kind) {
    case Kind::kInt:
      s.metavar = "N";
      break;
    case Kind::kDouble:
      s.metavar = "X";
      break;
    case Kind::kSwitch:
      s.default_value = "0";
      break;
    default:
      break;
  }
  return s;
}

Setting Int(std::string key, std::vector<std::string> names, std::string env,
            std::string yaml, std::string group, int64_t min, int64_t max,
            std::string default_value, std::string help,
            std::string unit = "") {
  Setting s = Make(std::move(key), std::move(names), Kind::kInt, std::move(env),
                   std::move(yaml), std::move(group), std::move(help));
  s.min = min;
  s.max = max;
  s.default_value = std::move(default_value);
  s.unit = std::move(unit);
  return s;
}

Setting Dbl(std::string key, std::vector<std::string> names, std::string env,
            std::string yaml, std::string group, double min, double max,
            std::string default_value, std::string help,
            std::string unit = "") {
  Setting s =
      Make(std::move(key), std::move(names), Kind::kDouble, std::move(env),
           std::move(yaml), std::move(group), std::move(help));
  s.dmin = min;
  s.dmax = max;
  s.default_value = std::move(default_value);
  s.unit = std::move(unit);
  return s;
}

std::vector<Setting> Build() {
  const std::string kGeneral = "general";
  const std::string kHosts = "hosts";
  const std::string kTune = "tuning";
  const std::string kAuto = "autotune";
  const std::string kTimeline = "timeline";
  const std::string kStall = "stall check";
  const std::string kLib = "library";
  const std::string kLog = "logging and output";
  std::vector<Setting> t;
  t.push_back(Int("start_timeout", {"--start-timeout"}, "HOROVOD_START_TIMEOUT",
                  "", kGeneral, 1, 86400, "30",
                  "seconds for the launcher's own start-up (host checks, "
                  "spawning) and for a worker to reach the rendezvous",
                  "s"));
  // Not Horovod's: a worker may take minutes to reach hvd::init() (a
  // Python script importing a framework, loading data), and one that exits
  // ends the job anyway, so by default the launcher times nobody out for
  // being slow; init() itself meets its peers within
  // HOROVOD_GLOO_TIMEOUT_SECONDS unless this is given.
  t.push_back(Int("join_timeout", {"--join-timeout"}, "HVD_JOIN_TIMEOUT", "",
                  kGeneral, 0, kWeek, "0",
                  "seconds every worker may take to call hvd::init() and meet "
                  "its peers; those still missing are named and the job "
                  "stopped (0: no limit at the launcher, and init() waits "
                  "--gloo-timeout-seconds for its peers)",
                  "s"));
  // Read by workers as well: an elastic job's survivors wait this long
  // for the launcher's next membership when they re-join after a reset.
  t.push_back(Int("elastic_timeout", {"--elastic-timeout"},
                  "HOROVOD_ELASTIC_TIMEOUT", "elastic.elastic_timeout",
                  "elastic", 1, kWeek, "600",
                  "seconds an elastic job waits for --min-np slots before it "
                  "gives up; also how long its workers wait to re-join",
                  "s"));
  {
    Setting s = Make("network_interface", {"--network-interface"},
                     Kind::kString, "HOROVOD_GLOO_IFACE", "", kHosts,
                     "interface for Gloo traffic and the advertised "
                     "rendezvous address (repeatable; Gloo takes the first)");
    s.metavar = "IF";
    s.repeatable = true;
    t.push_back(s);
  }
  {
    Setting s =
        Int("fusion_threshold_mb", {"--fusion-threshold-mb"},
            "HOROVOD_FUSION_THRESHOLD", "params.fusion_threshold_mb", kTune, 0,
            1 << 20, "128", "tensor fusion buffer size in MB", "MB");
    s.env_scale = 1 << 20;  // the variable holds bytes, as Horovod's
    t.push_back(s);
  }
  t.push_back(Dbl("cycle_time_ms", {"--cycle-time-ms"}, "HOROVOD_CYCLE_TIME",
                  "params.cycle_time_ms", kTune, 0, 1e6, "0",
                  "pace cycles this many ms apart, batching what arrives "
                  "between them, as Horovod does; 0 starts each at once",
                  "ms"));
  t.push_back(Int("cache_capacity", {"--cache-capacity"},
                  "HOROVOD_CACHE_CAPACITY", "params.cache_capacity", kTune, 0,
                  1 << 20, "1024", "response cache entries, 0 disables"));
  t.push_back(Make("hierarchical_allreduce", {"--hierarchical-allreduce"},
                   Kind::kSwitch, "HOROVOD_HIERARCHICAL_ALLREDUCE",
                   "params.hierarchical_allreduce", kTune,
                   "reduce within hosts, then across them (default: on "
                   "where every host holds the same number of ranks)"));
  t.back().default_value = "";
  t.push_back(Make("hierarchical_allgather", {"--hierarchical-allgather"},
                   Kind::kSwitch, "HOROVOD_HIERARCHICAL_ALLGATHER",
                   "params.hierarchical_allgather", kTune,
                   "gather within hosts, then across them (default: as "
                   "hierarchical allreduce)"));
  t.back().default_value = "";
  t.push_back(Make("disable_group_fusion", {}, Kind::kSwitch,
                   "HOROVOD_DISABLE_GROUP_FUSION", "", kTune,
                   "fuse a grouped allreduce's tensors only with each other"));
  t.push_back(Make("dynamic_process_sets", {}, Kind::kSwitch,
                   "HOROVOD_DYNAMIC_PROCESS_SETS", "", kLib,
                   "allow process sets to be added and removed after init"));
  t.push_back(Make("elastic", {}, Kind::kSwitch, "HOROVOD_ELASTIC", "",
                   "elastic",
                   "set by horovodrun in an elastic job: ranks come from the "
                   "rendezvous alone, as memberships change"));
  t.push_back(Make("metrics_disable", {}, Kind::kSwitch,
                   "HOROVOD_METRICS_DISABLE", "", kTune,
                   "measure nothing for the metrics (they cost a few "
                   "additions per collective; this is for comparing)"));
  t.push_back(Make("shm_disable", {}, Kind::kSwitch, "HOROVOD_SHM_DISABLE", "",
                   kTune,
                   "move data between the ranks of a host over TCP instead "
                   "of shared memory"));
  t.push_back(Make("tcp_ring_disable", {}, Kind::kSwitch,
                   "HOROVOD_TCP_RING_DISABLE", "", kTune,
                   "allreduce over TCP with Gloo's own ring instead of hvd's "
                   "(hvd's reads and writes its sockets on the calling "
                   "thread; this is for comparing)"));
  t.push_back(Int("tcp_streams", {}, "HOROVOD_TCP_STREAMS", "", kTune, 1, 16,
                  "2",
                  "TCP connections to each ring neighbour: an allreduce step "
                  "of at least HOROVOD_TCP_STREAM_BYTES per connection "
                  "spreads over them (one TCP flow rarely fills a fast link)",
                  ""));
  t.push_back(Int("tcp_stream_bytes", {}, "HOROVOD_TCP_STREAM_BYTES", "", kTune,
                  4096, int64_t{1} << 40, "1048576",
                  "bytes of a ring step per TCP connection below which the "
                  "step uses fewer connections",
                  "B"));
  t.push_back(Int("tcp_doubling_bytes", {}, "HOROVOD_TCP_DOUBLING_BYTES", "",
                  kTune, 0, int64_t{1} << 40, "65536",
                  "allreduces over TCP of at most this many bytes take "
                  "recursive doubling (log2(ranks) trips, each with the whole "
                  "buffer) instead of the ring (2(ranks - 1) trips, each "
                  "with a slice of it); 0 never",
                  "B"));
  t.push_back(Int("tcp_halving_bytes", {}, "HOROVOD_TCP_HALVING_BYTES", "",
                  kTune, 0, int64_t{1} << 40, "4194304",
                  "allreduces over TCP past HOROVOD_TCP_DOUBLING_BYTES and up "
                  "to this many bytes, on more than three ranks, take "
                  "reduce-scatter by recursive halving and allgather by "
                  "recursive doubling (2 log2(ranks) trips) instead of the "
                  "ring (2(ranks - 1) trips); the same bytes either way",
                  "B"));
  t.push_back(Int("control_mesh_ranks", {}, "HOROVOD_CONTROL_MESH_RANKS", "",
                  kTune, 1, 1 << 20, "2",
                  "jobs over TCP of at most this many ranks negotiate over a "
                  "full mesh (every rank sends each cycle's message to every "
                  "other: one trip, ranks - 1 sockets each); larger ones by "
                  "recursive doubling (log2(ranks) trips, log2(ranks) sockets)",
                  ""));
  t.push_back(Make("control_host_leaders", {}, Kind::kSwitch,
                   "HOROVOD_CONTROL_HOST_LEADERS", "", kTune,
                   "across hosts, negotiate through one leader per host (the "
                   "host's ranks meet in shared memory; only the leaders "
                   "exchange over TCP) instead of among all the ranks"));
  t.push_back(
      Int("shm_single_copy_threshold", {}, "HOROVOD_SHM_SINGLE_COPY_THRESHOLD",
          "", kTune, 0, int64_t{1} << 40, "0",
          "allreduces of at least this many bytes between a host's ranks read "
          "each other's buffers directly (one copy, process_vm_readv) instead "
          "of through the segment; 0 never (the default: on the 2-core VM "
          "measured, the segment's path is about twice as fast from 2 to 16 "
          "MiB)",
          "B"));
  t.push_back(Int(
      "shm_single_copy_limit", {}, "HOROVOD_SHM_SINGLE_COPY_LIMIT", "", kTune,
      0, int64_t{1} << 40, "16777216",
      "allreduces of more bytes go through the segment again: reading a "
      "peer's buffer that no cache holds with process_vm_readv falls behind "
      "the segment's copies (between 16 and 32 MiB on a 2-core VM); 0 no "
      "limit",
      "B"));
  t.push_back(Make("autotune", {"--autotune"}, Kind::kSwitch,
                   "HOROVOD_AUTOTUNE", "autotune.enabled", kAuto,
                   "tune fusion threshold and cycle time while training"));
  {
    Setting s = Make("autotune_log_file", {"--autotune-log-file"},
                     Kind::kString, "HOROVOD_AUTOTUNE_LOG", "autotune.log_file",
                     kAuto, "CSV of every sample, best values last");
    s.metavar = "FILE";
    t.push_back(s);
  }
  t.push_back(Int("autotune_warmup_samples", {"--autotune-warmup-samples"},
                  "HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "autotune.warmup_samples",
                  kAuto, 0, 1 << 20, "3", "samples discarded first"));
  t.push_back(Int("autotune_steps_per_sample", {"--autotune-steps-per-sample"},
                  "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE",
                  "autotune.steps_per_sample", kAuto, 1, 1 << 20, "10",
                  "steps scored per sample"));
  t.push_back(Int("autotune_bayes_opt_max_samples",
                  {"--autotune-bayes-opt-max-samples"},
                  "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES",
                  "autotune.bayes_opt_max_samples", kAuto, 1, 1 << 20, "20",
                  "Bayesian optimisation samples"));
  t.push_back(Dbl("autotune_gaussian_process_noise",
                  {"--autotune-gaussian-process-noise"},
                  "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE",
                  "autotune.gaussian_process_noise", kAuto, 0, 1, "0.8",
                  "noise of the Gaussian process, in [0, 1]"));
  t.push_back(Make("autotune_start", {}, Kind::kString, "HVD_AUTOTUNE_START",
                   "", kAuto,
                   "where autotune starts, FUSION_MB,CYCLE_MS, without "
                   "pinning either (a fusion threshold or cycle time given "
                   "explicitly wins)"));
  {
    Setting s =
        Make("timeline_filename", {"--timeline-filename"}, Kind::kString,
             "HOROVOD_TIMELINE", "timeline.filename", kTimeline,
             "write a Chrome trace of every tensor's phases (rank 0)");
    s.metavar = "FILE";
    t.push_back(s);
  }
  t.push_back(Make("timeline_mark_cycles", {"--timeline-mark-cycles"},
                   Kind::kSwitch, "HOROVOD_TIMELINE_MARK_CYCLES",
                   "timeline.mark_cycles", kTimeline,
                   "mark each engine cycle in the timeline"));
  // Its YAML key is the inverse, stall_check.enabled (launcher/cli.cc).
  t.push_back(Make("no_stall_check", {"--no-stall-check"}, Kind::kSwitch,
                   "HOROVOD_STALL_CHECK_DISABLE", "", kStall,
                   "do not warn about tensors some ranks never submit"));
  t.push_back(Int("stall_check_warning_time_seconds",
                  {"--stall-check-warning-time-seconds"},
                  "HOROVOD_STALL_CHECK_TIME_SECONDS",
                  "stall_check.warning_time_seconds", kStall, 1, kWeek, "60",
                  "warn after this many seconds", "s"));
  t.push_back(Int("stall_check_shutdown_time_seconds",
                  {"--stall-check-shutdown-time-seconds"},
                  "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS",
                  "stall_check.shutdown_time_seconds", kStall, 0, kWeek, "0",
                  "end the job after this many seconds of stall; 0 never",
                  "s"));
  // Not Horovod's (PyTorch's TORCH_NCCL_TRACE_BUFFER_SIZE is the nearest):
  // what a dump of a hung or slow job shows of each rank.
  t.push_back(Int("flight_recorder_entries", {"--flight-recorder-entries"},
                  "HVD_FLIGHT_RECORDER_ENTRIES", "", kStall, 0, 1 << 20, "2000",
                  "collectives each rank's flight recorder keeps (name, op, "
                  "size, when submitted, negotiated, started, finished) for "
                  "dumps of a hung or slow job; 0 keeps none"));
  t.push_back(Int("gloo_timeout_seconds", {"--gloo-timeout-seconds"},
                  "HOROVOD_GLOO_TIMEOUT_SECONDS",
                  "library_options.gloo_timeout_seconds", kLib, 1, 86400, "30",
                  "seconds a collective, or init() meeting its peers, may "
                  "wait for a peer",
                  "s"));
  t.push_back(Int("num_nccl_streams", {"--num-nccl-streams"},
                  "HOROVOD_NUM_NCCL_STREAMS",
                  "library_options.num_nccl_streams", kLib, 1, 64, "1",
                  "NCCL streams per GPU"));
  {
    Setting s =
        Make("thread_affinity", {"--thread-affinity"}, Kind::kIntList,
             "HOROVOD_THREAD_AFFINITY", "library_options.thread_affinity", kLib,
             "cores for the background threads, one per local rank "
             "(e.g. 0,8)");
    s.min = 0;
    s.max = 1 << 20;
    s.metavar = "CORES";
    t.push_back(s);
  }
  {
    // Not Horovod's: mpirun's --bind-to, whose default ours follows.
    Setting s = Make("bind_to", {"--bind-to"}, Kind::kChoice, "HVD_BIND_TO",
                     "library_options.bind_to", kLib,
                     "core: each local rank keeps to its share of the host's "
                     "CPUs (as mpirun; the default where all ranks share a "
                     "host and shared memory); none: the kernel places them");
    s.choices = {"CORE", "NONE"};
    s.metavar = "CORE|NONE";
    t.push_back(s);
  }
  {
    Setting s = Make("log_level", {"--log-level"}, Kind::kChoice,
                     "HOROVOD_LOG_LEVEL", "logging.level", kLog,
                     "TRACE, DEBUG, INFO, WARNING, ERROR or FATAL");
    s.choices = {"TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "FATAL"};
    s.default_value = "WARNING";
    s.metavar = "LEVEL";
    t.push_back(s);
  }
  // Its YAML key is the inverse, logging.with_timestamp (launcher/cli.cc).
  t.push_back(Make("log_without_timestamp", {"--log-without-timestamp"},
                   Kind::kSwitch, "HOROVOD_LOG_HIDE_TIME", "", kLog,
                   "log lines without timestamps"));
  return t;
}

}  // namespace

const std::vector<Setting>& Table() {
  static const std::vector<Setting> table = Build();
  return table;
}

const Setting& Get(std::string_view key) {
  for (const Setting& s : Table()) {
    if (s.key == key) return s;
  }
  std::fprintf(stderr, "hvd: no setting '%.*s' in the table\n",
               static_cast<int>(key.size()), key.data());
  std::abort();
}

namespace {

// A duration setting's value (in the variable's unit, the row's `unit`)
// as microseconds: the one conversion of time units.
std::chrono::microseconds Duration(const Setting& s, double value) {
  double per_unit = 0;
  if (s.unit == "s") per_unit = 1e6;
  if (s.unit == "ms") per_unit = 1e3;
  if (per_unit == 0) {
    std::fprintf(stderr, "hvd: setting '%s' is not a duration\n",
                 s.key.c_str());
    std::abort();
  }
  return std::chrono::microseconds(static_cast<int64_t>(value * per_unit));
}

}  // namespace

template <>
int64_t Default(Key<int64_t> key) {
  const Setting& s = Get(key);
  return std::stoll(s.default_value) * s.env_scale;
}

template <>
double Default(Key<double> key) {
  const Setting& s = Get(key);
  return std::stod(s.default_value) * s.env_scale;
}

template <>
std::chrono::seconds Default(Key<std::chrono::seconds> key) {
  const Setting& s = Get(key);
  return std::chrono::duration_cast<std::chrono::seconds>(
      Duration(s, std::stod(s.default_value)));
}

template <>
std::chrono::microseconds Default(Key<std::chrono::microseconds> key) {
  const Setting& s = Get(key);
  return Duration(s, std::stod(s.default_value));
}

EnvMap ProcessEnv() {
  EnvMap env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (!eq) continue;
    env.emplace(std::string(*e, static_cast<size_t>(eq - *e)),
                std::string(eq + 1));
  }
  return env;
}

bool Reader::Given(std::string_view key) const {
  auto it = env_.find(settings::Get(key).env);
  return it != env_.end() && !it->second.empty();
}

std::optional<std::string> Reader::Text(std::string_view key) const {
  auto it = env_.find(settings::Get(key).env);
  if (it == env_.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::optional<std::string> Reader::Value(const Setting& s) const {
  auto it = env_.find(s.env);
  if (it != env_.end() && !it->second.empty()) return it->second;
  if (s.default_value.empty()) return std::nullopt;
  return s.default_value;
}

StatusOr<int64_t> Reader::Int(std::string_view key) const {
  const Setting& s = settings::Get(key);
  if (auto text = Text(key)) {
    return ParseInt64(*text, s.env, s.min * s.env_scale, s.max * s.env_scale);
  }
  HVD_ASSIGN_OR_RETURN(int64_t d,
                       ParseInt64(s.default_value, s.key, s.min, s.max));
  return d * s.env_scale;
}

StatusOr<double> Reader::Double(std::string_view key) const {
  const Setting& s = settings::Get(key);
  if (auto text = Text(key)) {
    return ParseDouble(*text, s.env, s.dmin * s.env_scale,
                       s.dmax * s.env_scale);
  }
  HVD_ASSIGN_OR_RETURN(double d,
                       ParseDouble(s.default_value, s.key, s.dmin, s.dmax));
  return d * s.env_scale;
}

StatusOr<std::optional<bool>> Reader::OptionalBool(std::string_view key) const {
  const Setting& s = settings::Get(key);
  auto v = Value(s);
  if (!v) return std::optional<bool>();
  HVD_ASSIGN_OR_RETURN(bool b, ParseBool(*v, s.env));
  return std::optional<bool>(b);
}

StatusOr<std::string> Reader::Choice(std::string_view key) const {
  const Setting& s = settings::Get(key);
  auto v = Value(s);
  if (!v) return std::string();
  std::string up = *v;
  std::transform(up.begin(), up.end(), up.begin(), ::toupper);
  if (std::find(s.choices.begin(), s.choices.end(), up) == s.choices.end()) {
    std::string list;
    for (const std::string& c : s.choices)
      list += (list.empty() ? "" : ", ") + c;
    return Status::InvalidArgument(
        s.env, "must be one of " + list + " (got '" + *v + "')");
  }
  return up;
}

StatusOr<std::vector<int64_t>> Reader::IntList(std::string_view key) const {
  const Setting& s = settings::Get(key);
  auto v = Value(s);
  if (!v) return std::vector<int64_t>();
  return ParseIntList(*v, s.env, s.min, s.max);
}

std::string Reader::String(std::string_view key) const {
  return Value(settings::Get(key)).value_or("");
}

template <>
StatusOr<int64_t> Reader::Get(Key<int64_t> key) const {
  return Int(key.name);
}

template <>
StatusOr<double> Reader::Get(Key<double> key) const {
  return Double(key.name);
}

template <>
StatusOr<bool> Reader::Get(Key<bool> key) const {
  HVD_ASSIGN_OR_RETURN(std::optional<bool> b, OptionalBool(key.name));
  return b.value_or(false);
}

template <>
StatusOr<std::optional<bool>> Reader::Get(Key<std::optional<bool>> key) const {
  return OptionalBool(key.name);
}

template <>
StatusOr<std::string> Reader::Get(Key<std::string> key) const {
  if (settings::Get(std::string_view(key.name)).kind == Kind::kChoice) {
    return Choice(key.name);
  }
  return String(key.name);
}

template <>
StatusOr<std::vector<int64_t>> Reader::Get(
    Key<std::vector<int64_t>> key) const {
  return IntList(key.name);
}

template <>
StatusOr<std::chrono::microseconds> Reader::Get(
    Key<std::chrono::microseconds> key) const {
  const Setting& s = settings::Get(key);
  HVD_ASSIGN_OR_RETURN(double v, Double(key.name));
  return Duration(s, v);
}

template <>
StatusOr<std::chrono::seconds> Reader::Get(
    Key<std::chrono::seconds> key) const {
  const Setting& s = settings::Get(key);
  HVD_ASSIGN_OR_RETURN(int64_t v, Int(key.name));
  return std::chrono::duration_cast<std::chrono::seconds>(
      Duration(s, static_cast<double>(v)));
}

Status Reader::CheckRow(std::string_view key) const {
  switch (settings::Get(key).kind) {
    case Kind::kInt:
      return Int(key).status();
    case Kind::kDouble:
      return Double(key).status();
    case Kind::kChoice:
      return Choice(key).status();
    case Kind::kSwitch:
      return OptionalBool(key).status();
    case Kind::kIntList:
      return IntList(key).status();
    case Kind::kString:
      break;
  }
  return Status::Ok();
}

}  // namespace hvd::settings
