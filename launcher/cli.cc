#include "launcher/cli.h"

#include <optional>
#include <sstream>

#include "common/host_port.h"
#include "common/parse.h"
#include "launcher/config_file.h"
#include "launcher/flags.h"

// horovodrun's command line in four phases, each a function of its own:
// Tokenize (words -> checked flag values), MergeConfigFile (--config-file
// under them), Validate (rules between flags, on the values given) and
// Bind (typed LaunchOptions, with what only the bound values or the
// environment can tell). Flags are named by key:: constants, never by text.

namespace hvd::launcher {
namespace {

using Env = std::map<std::string, std::string>;

// Horovod refuses cooldowns past an hour (its DEFAULT_COOLDOWN_UPPER_LIMIT).
constexpr int64_t kCooldownMostS = 3600;

bool IsOption(const std::string& word) {
  return word.size() > 1 && word[0] == '-';
}

// --- Tokenize ----------------------------------------------------------------

struct Tokens {
  FlagValues given;
  std::vector<std::string> notes;    // flags accepted but meaningless
  std::vector<std::string> command;  // everything after the options
  bool help = false, version = false, check_build = false;
  std::string analyze;  // --analyze DIR
};

// The value words of flag `f` given as `word` (its text after '=' when
// inline), advancing `i` past those it takes from `args`.
StatusOr<std::string> FlagValue(const FlagSpec& f, const std::string& word,
                                const std::optional<std::string>& inline_value,
                                const std::vector<std::string>& args,
                                size_t& i) {
  if (f.kind == FlagKind::kSwitch) {
    if (inline_value) return Status::InvalidArgument(word, "takes no value");
    return f.switch_value;
  }
  if (inline_value) return *inline_value;
  if (i + static_cast<size_t>(f.values) >= args.size()) {
    return Status::InvalidArgument(
        word, f.values == 1 ? "needs a value"
                            : "needs " + std::to_string(f.values) +
                                  " values (" + f.metavar + ")");
  }
  std::string value;
  for (int k = 0; k < f.values; ++k) value += (k ? " " : "") + args[++i];
  return value;
}

// Keeps flag `f`'s value. Two forms of one switch (--autotune and
// --no-autotune) that disagree contradict each other, as in Horovod's
// argparse groups; a repeatable flag gathers its values.
Status Record(const FlagSpec& f, const std::string& value,
              std::map<std::string, std::string>& set_by, FlagValues& given) {
  auto by = set_by.find(f.key);
  if (f.kind == FlagKind::kSwitch && by != set_by.end() &&
      by->second != f.names[0] && given.Get(f) != value) {
    return Status::InvalidArgument(f.names[0], "conflicts with " + by->second);
  }
  set_by[f.key] = f.names[0];
  auto before = given.Get(f);
  given.Set(f, f.repeatable && before ? *before + "," + value : value);
  return Status::Ok();
}

// Options up to the first word that is not one (or "--"); the rest is the
// command, as with argparse's REMAINDER. -h, -v, -cb and --analyze end it
// at once.
StatusOr<Tokens> Tokenize(const std::vector<std::string>& args) {
  Tokens t;
  std::map<std::string, std::string> set_by;  // key -> the flag that set it
  size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string word = args[i];
    if (word == "--") {
      ++i;
      break;
    }
    if (!IsOption(word)) break;
    std::optional<std::string> inline_value;
    if (size_t eq = word.find('=');
        word.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = word.substr(eq + 1);
      word = word.substr(0, eq);
    }
    HVD_ASSIGN_OR_RETURN(const FlagSpec* f, FindFlagOrAbbreviation(word));
    if (f == nullptr) {
      return Status::InvalidArgument(word,
                                     "unknown option (see horovodrun --help)");
    }
    if (!f->refused_why.empty()) {
      return Status::InvalidArgument(f->names[0], f->refused_why);
    }
    HVD_ASSIGN_OR_RETURN(std::string value,
                         FlagValue(*f, word, inline_value, args, i));
    HVD_ASSIGN_OR_RETURN(std::string canonical,
                         CanonicalValue(*f, value, word));
    if (!f->ignored_why.empty()) {
      t.notes.push_back(f->names[0] + " ignored: " + f->ignored_why);
      continue;
    }
    HVD_RETURN_IF_ERROR(Record(*f, canonical, set_by, t.given));
    t.help = f->key == key::kHelp.name();
    t.version = f->key == key::kVersion.name();
    t.check_build = f->key == key::kCheckBuild.name();
    if (f->key == key::kAnalyze.name()) t.analyze = canonical;
    if (t.help || t.version || t.check_build || !t.analyze.empty()) return t;
  }
  t.command.assign(args.begin() + i, args.end());
  return t;
}

// --- MergeConfigFile ---------------------------------------------------------

// The config file's values, with the command line's over them (in both
// directions: a flag given turns a file's switch on or off).
StatusOr<FlagValues> MergeConfigFile(const Tokens& t,
                                     const ReadFileFn& read_file,
                                     std::vector<std::string>& notes,
                                     std::vector<std::string>& warnings) {
  FlagValues merged;
  if (auto cfg = t.given.Get(key::kConfigFile)) {
    HVD_ASSIGN_OR_RETURN(std::string text, read_file(*cfg));
    HVD_RETURN_IF_ERROR(ReadConfigFile(text, *cfg, merged, notes, warnings));
  }
  merged.Override(t.given);
  return merged;
}

// --- Validate ----------------------------------------------------------------
// Rules between flags, on the values given; each error names the flag to
// change. Values are already checked one by one (CanonicalValue).

bool Elastic(const FlagValues& s) {
  return s.Has(key::kHostDiscoveryScript) || s.Has(key::kMinNp) ||
         s.Has(key::kMaxNp);
}

int IntOf(const FlagValues& s, FlagKey k) { return std::stoi(*s.Get(k)); }

// The elastic flags: only for an elastic job, and consistent.
Status ValidateElastic(const FlagValues& s) {
  if (!Elastic(s)) {
    for (FlagKey k : {key::kSlotsPerHost, key::kResetLimit,
                      key::kBlacklistCooldownRange, key::kElasticTimeout}) {
      if (s.Has(k)) {
        return Status::InvalidArgument(
            FindFlagByKey(k.name())->names[0],
            "is for elastic jobs; give --host-discovery-script or "
            "--min-np/--max-np too, or drop it");
      }
    }
    return Status::Ok();
  }
  auto min_np = s.Get(key::kMinNp), max_np = s.Get(key::kMaxNp);
  if (min_np && max_np && std::stoi(*max_np) > 0 &&
      std::stoi(*min_np) > std::stoi(*max_np)) {
    return Status::InvalidArgument("--min-np " + *min_np,
                                   "is more than --max-np " + *max_np);
  }
  if (s.Has(key::kSlotsPerHost) && !s.Has(key::kHostDiscoveryScript)) {
    return Status::InvalidArgument(
        "--slots-per-host",
        "is the slots of hosts the discovery script prints without "
        ":SLOTS; give --host-discovery-script too, or drop it");
  }
  return Status::Ok();
}

// -np (or --min-np), the command, and where the hosts come from.
Status ValidateJob(const FlagValues& s,
                   const std::vector<std::string>& command) {
  const bool elastic = Elastic(s);
  auto np = s.Get(key::kNumProc);
  if (!np && s.Has(key::kMinNp) && IntOf(s, key::kMinNp) > 0) {
    np = s.Get(key::kMinNp);
  }
  if (!np) {
    return Status::InvalidArgument(
        "-np", elastic ? "is required: the number of processes to start with "
                         "(or give --min-np)"
                       : "is required: the number of processes");
  }
  if (elastic && s.Has(key::kMinNp) && IntOf(s, key::kMinNp) > std::stoi(*np)) {
    return Status::InvalidArgument(
        "--min-np " + *s.Get(key::kMinNp),
        "is more than -np " + *np + "; the job starts with -np processes");
  }
  if (elastic && s.Has(key::kMaxNp) && IntOf(s, key::kMaxNp) > 0 &&
      IntOf(s, key::kMaxNp) < std::stoi(*np)) {
    return Status::InvalidArgument("--max-np " + *s.Get(key::kMaxNp),
                                   "is less than -np " + *np);
  }
  if (command.empty()) {
    return Status::InvalidArgument(
        "command", "missing: give the program to run after the options");
  }
  const bool hosts = s.Has(key::kHosts), hostfile = s.Has(key::kHostfile);
  if (hosts && hostfile) {
    return Status::InvalidArgument("-H", "give -H or --hostfile, not both");
  }
  if (s.Has(key::kHostDiscoveryScript) && (hosts || hostfile)) {
    return Status::InvalidArgument(
        "--host-discovery-script",
        "gives the hosts; drop " + std::string(hosts ? "-H" : "--hostfile"));
  }
  return Status::Ok();
}

// How workers start: --mpi, --launcher, --mpi-args, --launcher-cmd.
Status ValidateLaunch(const FlagValues& s, const Env& env) {
  const bool srun = s.Get(key::kLauncher) == std::optional<std::string>("SRUN");
  if (s.On(key::kMpi)) {
    if (s.Has(key::kLauncher)) {
      return Status::InvalidArgument("--mpi", "conflicts with --launcher");
    }
    if (s.On(key::kGloo)) {
      return Status::InvalidArgument("--mpi", "conflicts with --gloo");
    }
    if (Elastic(s)) {
      return Status::InvalidArgument(
          "--mpi",
          "an elastic job starts and stops workers one by one, "
          "itself; drop --mpi");
    }
  }
  if (s.Has(key::kMpiArgs) && !s.On(key::kMpi)) {
    return Status::InvalidArgument("--mpi-args",
                                   "is for mpirun; give --mpi too");
  }
  if (auto t = s.Get(key::kLauncherCmd)) {
    if (t->find("{host}") == std::string::npos) {
      return Status::InvalidArgument(
          "--launcher-cmd",
          "must name the host as {host}, e.g. 'kubectl exec -i {host} --' "
          "(got '" +
              *t + "')");
    }
    if (s.On(key::kMpi) || srun) {
      return Status::InvalidArgument(
          "--launcher-cmd",
          std::string("conflicts with ") +
              (s.On(key::kMpi) ? "--mpi"
                               : "--launcher srun (give --launcher "
                                 "ssh inside a Slurm allocation)"));
    }
  }
  if (srun && !env.count("SLURM_JOB_ID")) {
    return Status::InvalidArgument(
        "--launcher srun",
        "starts workers in a Slurm allocation, and SLURM_JOB_ID is not set: "
        "run horovodrun under salloc or sbatch, or use --launcher ssh");
  }
  if (srun && Elastic(s)) {
    return Status::InvalidArgument(
        "--launcher srun",
        "an elastic job starts and stops workers one by one, over SSH; "
        "use --launcher ssh");
  }
  return Status::Ok();
}

// A running daemon (--rendezvous-*) and what needs horovodrun's own.
Status ValidateRendezvous(const FlagValues& s) {
  const bool daemon = s.Has(key::kRendezvousAddr);
  if (!daemon) {
    for (FlagKey k : {key::kRendezvousTokenFile, key::kRendezvousTlsCa,
                      key::kRendezvousTlsCert, key::kRendezvousTlsKey}) {
      if (s.Has(k)) {
        return Status::InvalidArgument("--rendezvous-*",
                                       "these options need --rendezvous-addr");
      }
    }
  } else if (!s.Has(key::kRendezvousTokenFile)) {
    return Status::InvalidArgument(
        "--rendezvous-addr",
        "needs --rendezvous-token-file with the daemon's admin token");
  }
  if (s.Has(key::kMonitorInterval) && !s.On(key::kMonitor)) {
    return Status::InvalidArgument("--monitor-interval",
                                   "is for --monitor; give it too");
  }
  if (s.Has(key::kRendezvousTlsCert) != s.Has(key::kRendezvousTlsKey)) {
    return Status::InvalidArgument("--rendezvous-tls-cert/--rendezvous-tls-key",
                                   "give both or neither");
  }
  if (s.Has(key::kRendezvousTlsCert) && !s.Has(key::kRendezvousTlsCa)) {
    return Status::InvalidArgument("--rendezvous-tls-cert",
                                   "needs --rendezvous-tls-ca");
  }
  auto w = s.Get(key::kStallWarningSeconds);
  auto d = s.Get(key::kStallShutdownSeconds);
  if (w && d && *d != "0" && std::stoll(*d) < std::stoll(*w)) {
    return Status::InvalidArgument(
        "--stall-check-shutdown-time-seconds",
        *d + " is shorter than the warning time " + *w);
  }
  return Status::Ok();
}

Status Validate(const FlagValues& s, const std::vector<std::string>& command,
                const Env& env) {
  HVD_RETURN_IF_ERROR(ValidateElastic(s));
  HVD_RETURN_IF_ERROR(ValidateJob(s, command));
  HVD_RETURN_IF_ERROR(ValidateLaunch(s, env));
  return ValidateRendezvous(s);
}

// --- Bind --------------------------------------------------------------------
// Typed options from validated values, and the rules that need what only
// binding knows (parsed hosts, the Slurm allocation, the environment).

// A launcher timeout as Horovod reads it: the flag, else the launcher's
// own variable (HOROVOD_START_TIMEOUT...), else the table's default.
StatusOr<int> SecondsOf(const FlagValues& s, const settings::Reader& env,
                        FlagKey flag, settings::Key<std::chrono::seconds> k) {
  if (s.Has(flag)) return IntOf(s, flag);
  HVD_ASSIGN_OR_RETURN(std::chrono::seconds from_env, env.Get(k));
  return static_cast<int>(from_env.count());
}

Status BindElastic(const FlagValues& s, const settings::Reader& env,
                   ElasticLaunchOptions& e) {
  e.enabled = Elastic(s);
  if (!e.enabled) return Status::Ok();
  e.discovery_script = s.Get(key::kHostDiscoveryScript).value_or("");
  if (s.Has(key::kMinNp)) e.min_np = IntOf(s, key::kMinNp);
  if (s.Has(key::kMaxNp)) e.max_np = IntOf(s, key::kMaxNp);
  if (s.Has(key::kSlotsPerHost))
    e.slots_per_host = IntOf(s, key::kSlotsPerHost);
  if (s.Has(key::kResetLimit)) e.reset_limit = IntOf(s, key::kResetLimit);
  HVD_ASSIGN_OR_RETURN(e.timeout_s, SecondsOf(s, env, key::kElasticTimeout,
                                              settings::key::kElasticTimeout));
  if (auto range = s.Get(key::kBlacklistCooldownRange)) {
    std::istringstream in(*range);
    std::string lo, hi, extra;
    in >> lo >> hi >> extra;
    const std::string what = "--blacklist-cooldown-range";
    if (hi.empty() || !extra.empty()) {
      return Status::InvalidArgument(
          what, "takes two numbers of seconds, MIN MAX (got '" + *range + "')");
    }
    HVD_ASSIGN_OR_RETURN(int64_t l,
                         ParseInt64(lo, what + " MIN", 1, kCooldownMostS));
    HVD_ASSIGN_OR_RETURN(int64_t h,
                         ParseInt64(hi, what + " MAX", 1, kCooldownMostS));
    if (l > h) {
      return Status::InvalidArgument(what,
                                     "MIN " + lo + " is more than MAX " + hi);
    }
    e.cooldown_lo_s = static_cast<double>(l);
    e.cooldown_hi_s = static_cast<double>(h);
  }
  return Status::Ok();
}

// -np, the timeouts (the flag, else the launcher's own variable, else the
// table's default) and --verbose.
Status BindJob(const FlagValues& s, const Env& env, LaunchOptions& o) {
  const settings::Reader from_env(env);
  HVD_RETURN_IF_ERROR(BindElastic(s, from_env, o.elastic));
  o.num_proc =
      s.Has(key::kNumProc) ? IntOf(s, key::kNumProc) : o.elastic.min_np;
  if (o.elastic.enabled && o.elastic.min_np == 0) {
    o.elastic.min_np = o.num_proc;
  }
  HVD_ASSIGN_OR_RETURN(
      o.start_timeout_s,
      SecondsOf(s, from_env, key::kStartTimeout, settings::key::kStartTimeout));
  HVD_ASSIGN_OR_RETURN(
      o.join_timeout_s,
      SecondsOf(s, from_env, key::kJoinTimeout, settings::key::kJoinTimeout));
  o.verbose = s.On(key::kVerbose);
  return Status::Ok();
}

// The hosts: -H, --hostfile, the Slurm allocation, the discovery script,
// or this machine.
Status BindHosts(const FlagValues& s, const Env& env,
                 const ReadFileFn& read_file, LaunchOptions& o) {
  if (auto hosts = s.Get(key::kHosts)) {
    HVD_ASSIGN_OR_RETURN(o.hosts, ParseHostList(*hosts));
    o.hosts_from = "-H " + *hosts;
  } else if (auto hostfile = s.Get(key::kHostfile)) {
    HVD_ASSIGN_OR_RETURN(std::string text, read_file(*hostfile));
    HVD_ASSIGN_OR_RETURN(o.hosts, ParseHostFile(text, *hostfile));
    o.hosts_from = "--hostfile " + *hostfile;
  } else if (auto nodes = env.find("SLURM_JOB_NODELIST"); nodes != env.end()) {
    // Tasks per node as the allocation asked (-n), else its CPUs.
    auto tasks = env.find("SLURM_TASKS_PER_NODE");
    if (tasks == env.end()) tasks = env.find("SLURM_JOB_CPUS_PER_NODE");
    if (tasks == env.end()) {
      return Status::InvalidArgument(
          "SLURM_JOB_NODELIST",
          "is set but neither SLURM_TASKS_PER_NODE nor "
          "SLURM_JOB_CPUS_PER_NODE is");
    }
    HVD_ASSIGN_OR_RETURN(o.hosts,
                         ParseSlurmHosts(nodes->second, tasks->second));
    o.hosts_from = "the Slurm allocation";
  } else if (o.elastic.enabled && o.elastic.discovery_script.empty()) {
    return Status::InvalidArgument(
        "--min-np/--max-np",
        "an elastic job needs its hosts: give --host-discovery-script, or "
        "-H or --hostfile for a fixed set");
  } else if (o.elastic.discovery_script.empty()) {
    o.hosts = {{"localhost", o.num_proc, ""}};
    o.hosts_from = "-H localhost:" + std::to_string(o.num_proc);
  } else {
    o.hosts_from = "--host-discovery-script " + o.elastic.discovery_script;
  }
  return Status::Ok();
}

// How workers start: mpirun, one srun step (asked for, or inside a Slurm
// allocation given no hosts), a command, or SSH.
Status BindLaunch(const FlagValues& s, LaunchOptions& o) {
  const bool from_slurm = o.hosts_from == "the Slurm allocation";
  if (auto l = s.Get(key::kLauncher)) {
    o.launcher = *l == "SRUN" ? Launcher::kSrun : Launcher::kSsh;
    o.launcher_given = true;
  } else if (from_slurm) {
    o.launcher = Launcher::kSrun;
  }
  if (s.On(key::kMpi)) {
    o.launcher = Launcher::kMpirun;
    o.launcher_given = true;
    for (const HostSpec& h : o.hosts) {
      if (!h.user.empty()) {
        return Status::InvalidArgument(
            "--mpi", "mpirun's -H takes no user (" + h.user + "@" + h.host +
                         "); set it in ~/.ssh/config");
      }
    }
  }
  if (auto a = s.Get(key::kMpiArgs)) {
    HVD_ASSIGN_OR_RETURN(o.mpi_args, SplitWords(*a, "--mpi-args"));
  }
  if (auto t = s.Get(key::kLauncherCmd)) {
    HVD_RETURN_IF_ERROR(SplitWords(*t, "--launcher-cmd").status());
    if (o.launcher == Launcher::kSrun) {
      return Status::InvalidArgument(
          "--launcher-cmd",
          "conflicts with --launcher srun (give --launcher ssh inside a "
          "Slurm allocation)");
    }
    o.launcher_cmd = *t;
  }
  // An elastic job inside an allocation starts its workers over SSH.
  if (o.launcher == Launcher::kSrun && o.elastic.enabled) {
    o.launcher = Launcher::kSsh;
  }
  return Status::Ok();
}

// SSH, the interfaces workers use and where output goes.
void BindRemote(const FlagValues& s, LaunchOptions& o) {
  if (s.Has(key::kSshPort)) o.ssh_port = IntOf(s, key::kSshPort);
  o.ssh_identity_file = s.Get(key::kSshIdentityFile).value_or("");
  if (auto c = s.Get(key::kSshHostKeyCheck)) {
    o.host_key_check = *c == "STRICT"       ? HostKeyCheck::kStrict
                       : *c == "ACCEPT-NEW" ? HostKeyCheck::kAcceptNew
                                            : HostKeyCheck::kOff;
  }
  if (auto n = s.Get(key::kNetworkInterface)) {
    std::stringstream in(*n);
    std::string item;
    while (std::getline(in, item, ',')) o.network_interfaces.push_back(item);
  }
  o.output_filename = s.Get(key::kOutputFilename).value_or("");
  o.prefix_output_with_timestamp = s.On(key::kPrefixTimestamp);
}

// The rendezvous daemon, if any, and the metrics (the flag, else
// HOROVOD_METRICS_PORT), which reach horovodrun through its own.
Status BindRendezvous(const FlagValues& s, const Env& env, LaunchOptions& o) {
  if (auto a = s.Get(key::kRendezvousAddr)) {
    // Several: daemons serving the same jobs (one etcd prefix); clients
    // move to the next when one cannot be reached.
    HVD_RETURN_IF_ERROR(ParseHostPortList(*a, "--rendezvous-addr").status());
    o.rendezvous_addr = *a;
  }
  o.rendezvous_token_file = s.Get(key::kRendezvousTokenFile).value_or("");
  o.rendezvous_tls_ca = s.Get(key::kRendezvousTlsCa).value_or("");
  o.rendezvous_tls_cert = s.Get(key::kRendezvousTlsCert).value_or("");
  o.rendezvous_tls_key = s.Get(key::kRendezvousTlsKey).value_or("");
  if (s.Has(key::kMetricsPort)) {
    o.metrics_port = IntOf(s, key::kMetricsPort);
  } else if (auto e = env.find("HOROVOD_METRICS_PORT"); e != env.end()) {
    HVD_ASSIGN_OR_RETURN(
        int64_t port, ParseInt64(e->second, "HOROVOD_METRICS_PORT", 1, 65535));
    o.metrics_port = static_cast<int>(port);
  }
  o.monitor = s.On(key::kMonitor);
  if (s.Has(key::kMonitorInterval)) {
    o.monitor_interval_s = IntOf(s, key::kMonitorInterval);
  }
  if ((o.metrics_port > 0 || o.monitor) && !o.rendezvous_addr.empty()) {
    return Status::InvalidArgument(
        o.monitor ? "--monitor" : "--metrics-port",
        "the workers' metrics reach horovodrun through its own rendezvous; "
        "drop --rendezvous-addr");
  }
  return Status::Ok();
}

// HOROVOD_* for the workers, from the tuning settings that were given.
std::map<std::string, std::string> WorkerEnv(const FlagValues& s) {
  std::map<std::string, std::string> env;
  for (const FlagSpec& f : FlagTable()) {
    auto v = s.Get(f);
    if (!v || f.env.empty()) continue;
    if (f.env_scale != 1) {
      // Converted once, here: the variable's unit is the table's.
      env[f.env] = std::to_string(std::stoll(*v) * f.env_scale);
    } else if (f.key == key::kNetworkInterface.name()) {
      // Gloo binds one interface: the first given; NCCL may use them all.
      env[f.env] = v->substr(0, v->find(','));
      env["NCCL_SOCKET_IFNAME"] = *v;
    } else {
      env[f.env] = *v;
    }
  }
  // --tcp: as Horovod, NCCL keeps to TCP sockets.
  if (s.On(key::kTcp)) env["NCCL_IB_DISABLE"] = "1";
  return env;
}

StatusOr<LaunchOptions> Bind(const FlagValues& s, const Env& env,
                             const ReadFileFn& read_file) {
  LaunchOptions o;
  HVD_RETURN_IF_ERROR(BindJob(s, env, o));
  HVD_RETURN_IF_ERROR(BindHosts(s, env, read_file, o));
  HVD_RETURN_IF_ERROR(BindLaunch(s, o));
  BindRemote(s, o);
  HVD_RETURN_IF_ERROR(BindRendezvous(s, env, o));
  o.worker_env = WorkerEnv(s);
  return o;
}

}  // namespace

StatusOr<LaunchOptions> ParseCommandLine(const std::vector<std::string>& args,
                                         const Env& env,
                                         const ReadFileFn& read_file) {
  HVD_ASSIGN_OR_RETURN(Tokens t, Tokenize(args));
  if (t.help || t.version || t.check_build || !t.analyze.empty()) {
    LaunchOptions o;
    o.show_help = t.help;
    o.show_version = t.version;
    o.check_build = t.check_build;
    o.analyze = t.analyze;
    return o;
  }
  std::vector<std::string> notes = std::move(t.notes), warnings;
  HVD_ASSIGN_OR_RETURN(FlagValues s,
                       MergeConfigFile(t, read_file, notes, warnings));
  HVD_RETURN_IF_ERROR(Validate(s, t.command, env));
  HVD_ASSIGN_OR_RETURN(LaunchOptions o, Bind(s, env, read_file));
  o.notes = std::move(notes);
  o.warnings = std::move(warnings);
  o.command = std::move(t.command);
  return o;
}

}  // namespace hvd::launcher
