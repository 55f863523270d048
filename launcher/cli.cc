#include "launcher/cli.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "common/host_port.h"
#include "common/parse.h"
#include "launcher/flags.h"

namespace hvd::launcher {
namespace {

bool IsOption(const std::string& word) {
  return word.size() > 1 && word[0] == '-';
}

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), ::toupper);
  return s;
}

// Checks `value` against the flag's kind and returns its canonical text.
// `what` names the flag or config key in errors.
StatusOr<std::string> Canonical(const FlagSpec& f, const std::string& value,
                                const std::string& what) {
  switch (f.kind) {
    case FlagKind::kInt: {
      HVD_ASSIGN_OR_RETURN(int64_t n, ParseInt64(value, what, f.min, f.max));
      return std::to_string(n);
    }
    case FlagKind::kDouble: {
      HVD_ASSIGN_OR_RETURN(double d, ParseDouble(value, what, f.dmin, f.dmax));
      (void)d;
      return value;
    }
    case FlagKind::kString:
      if (value.empty()) return Status::InvalidArgument(what, "is empty");
      return value;
    case FlagKind::kChoice: {
      std::string up = Upper(value);
      if (std::find(f.choices.begin(), f.choices.end(), up) ==
          f.choices.end()) {
        std::string list;
        for (const std::string& c : f.choices) {
          list += (list.empty() ? "" : ", ") + c;
        }
        return Status::InvalidArgument(
            what, "must be one of " + list + " (got '" + value + "')");
      }
      return up;
    }
    case FlagKind::kSwitch: {
      HVD_ASSIGN_OR_RETURN(bool b, ParseBool(value, what));
      return std::string(b ? "1" : "0");
    }
    case FlagKind::kIntList:
      HVD_RETURN_IF_ERROR(ParseIntList(value, what, 0, 1 << 20).status());
      return value;
  }
  return Status::Internal(what, "unknown flag kind");
}

using Settings = std::map<std::string, std::string>;  // key -> canonical

constexpr int64_t kWeekS = 7 * 86400;

// Reads Horovod's YAML config file into settings, as Horovod reads it: a
// top-level `controller`, then sections of keys. What hvd does not know is
// one warning, not an error (a file written for a newer Horovod still
// loads); Horovod keys that mean nothing for hvd are noted (--verbose).
Status ReadConfigSections(const std::string& text, const std::string& path,
                          Settings& out, std::vector<std::string>& notes,
                          std::vector<std::string>& warnings);

// Any conversion yaml-cpp refuses deep inside (a key that is a list, a
// value of the wrong shape) is the file's mistake, not a crash (found by
// fuzzing).
Status ReadConfigFile(const std::string& text, const std::string& path,
                      Settings& out, std::vector<std::string>& notes,
                      std::vector<std::string>& warnings) {
  try {
    return ReadConfigSections(text, path, out, notes, warnings);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(
        path, std::string("is YAML of a shape hvd cannot read: ") + e.what());
  }
}

Status ReadConfigSections(const std::string& text, const std::string& path,
                          Settings& out, std::vector<std::string>& notes,
                          std::vector<std::string>& warnings) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(
        path, std::string("is not valid YAML: ") + e.what());
  }
  if (root.IsNull()) return Status::Ok();
  if (!root.IsMap()) {
    return Status::InvalidArgument(path, "must be a mapping of sections");
  }
  for (const auto& section : root) {
    if (!section.first.IsScalar()) {
      return Status::InvalidArgument(path,
                                     "has a section name that is not a word");
    }
    std::string name = section.first.as<std::string>();
    if (name == "controller" && section.second.IsScalar()) {
      std::string c = Upper(section.second.as<std::string>());
      if (c == "MPI") {
        out["mpi"] = "1";  // mpirun starts the workers, as --mpi
        continue;
      }
      if (c != "GLOO") {
        return Status::InvalidArgument(path + ": controller",
                                       "no such controller '" +
                                           section.second.as<std::string>() +
                                           "' (gloo is the one hvd runs)");
      }
      continue;
    }
    static const char* const kSections[] = {
        "params",          "autotune", "timeline", "stall_check",
        "library_options", "logging",  "elastic"};
    const bool known = std::any_of(std::begin(kSections), std::end(kSections),
                                   [&](const char* k) { return name == k; });
    if (!known) {
      warnings.push_back(path + ": " + name +
                         ": not a section hvd knows, ignored");
      continue;
    }
    if (!section.second.IsMap()) {
      return Status::InvalidArgument(path + ": " + name,
                                     "must be a mapping of settings");
    }
    for (const auto& entry : section.second) {
      std::string key = entry.first.as<std::string>();
      std::string where = path + ": " + name + "." + key;
      const std::string full = name + "." + key;
      const FlagSpec* spec = FindYamlKey(full);
      std::string value;
      if (spec != nullptr && spec->values > 1 && entry.second.IsSequence()) {
        // A flag of several words is a list in YAML: [10, 100].
        for (const auto& item : entry.second) {
          if (!item.IsScalar()) {
            return Status::InvalidArgument(where, "must be a list of values");
          }
          value += (value.empty() ? "" : " ") + item.as<std::string>();
        }
      } else if (!entry.second.IsScalar()) {
        return Status::InvalidArgument(where, "must be a single value");
      } else {
        value = entry.second.as<std::string>();
      }
      // Two keys are the inverse of a flag.
      if (full == "stall_check.enabled" || full == "logging.with_timestamp") {
        HVD_ASSIGN_OR_RETURN(bool b, ParseBool(value, where));
        out[key == "enabled" ? "no_stall_check" : "log_without_timestamp"] =
            b ? "0" : "1";
        continue;
      }
      if (full == "library_options.mpi_threads_disable" ||
          full == "library_options.ccl_bgt_affinity") {
        notes.push_back(where + " ignored: hvd runs on Gloo, not MPI or CCL");
        continue;
      }
      if (spec == nullptr) {
        warnings.push_back(where + ": unknown setting, ignored");
        continue;
      }
      HVD_ASSIGN_OR_RETURN(out[spec->key], Canonical(*spec, value, where));
    }
  }
  return Status::Ok();
}

bool On(const Settings& s, const std::string& key) {
  auto it = s.find(key);
  return it != s.end() && it->second == "1";
}

std::optional<std::string> Get(const Settings& s, const std::string& key) {
  auto it = s.find(key);
  if (it == s.end()) return std::nullopt;
  return it->second;
}

// HOROVOD_* for the workers, from the tuning settings that were given.
StatusOr<std::map<std::string, std::string>> WorkerEnv(const Settings& s) {
  std::map<std::string, std::string> env;
  for (const FlagSpec& f : FlagTable()) {
    auto v = Get(s, f.key);
    if (!v || f.env.empty()) continue;
    if (f.env_scale != 1) {
      // Converted once, here: the variable's unit is the table's.
      env[f.env] = std::to_string(std::stoll(*v) * f.env_scale);
    } else if (f.key == "network_interface") {
      // Gloo binds one interface: the first given; NCCL may use them all.
      env[f.env] = v->substr(0, v->find(','));
      env["NCCL_SOCKET_IFNAME"] = *v;
    } else {
      env[f.env] = *v;
    }
  }
  // --tcp: as Horovod, NCCL keeps to TCP sockets.
  if (On(s, "tcp")) env["NCCL_IB_DISABLE"] = "1";
  if (auto w = Get(s, "stall_check_warning_time_seconds"),
      d = Get(s, "stall_check_shutdown_time_seconds");
      w && d && *d != "0" && std::stoll(*d) < std::stoll(*w)) {
    return Status::InvalidArgument(
        "--stall-check-shutdown-time-seconds",
        *d + " is shorter than the warning time " + *w);
  }
  return env;
}

// The elastic settings; an error for those given to a job that is not
// elastic, since they would change nothing.
Status ParseElastic(const Settings& s, ElasticLaunchOptions& e) {
  e.discovery_script = Get(s, "host_discovery_script").value_or("");
  auto min_np = Get(s, "min_np");
  auto max_np = Get(s, "max_np");
  e.enabled = !e.discovery_script.empty() || min_np || max_np;
  if (!e.enabled) {
    for (const char* key : {"slots_per_host", "reset_limit",
                            "blacklist_cooldown_range", "elastic_timeout"}) {
      if (Get(s, key)) {
        return Status::InvalidArgument(
            FindFlagByKey(key)->names[0],
            "is for elastic jobs; give --host-discovery-script or "
            "--min-np/--max-np too, or drop it");
      }
    }
    return Status::Ok();
  }
  if (min_np) e.min_np = std::stoi(*min_np);
  if (max_np) e.max_np = std::stoi(*max_np);
  if (e.max_np > 0 && e.min_np > e.max_np) {
    return Status::InvalidArgument("--min-np " + *min_np,
                                   "is more than --max-np " + *max_np);
  }
  if (auto n = Get(s, "slots_per_host")) {
    if (e.discovery_script.empty()) {
      return Status::InvalidArgument(
          "--slots-per-host",
          "is the slots of hosts the discovery script prints without "
          ":SLOTS; give --host-discovery-script too, or drop it");
    }
    e.slots_per_host = std::stoi(*n);
  }
  if (auto n = Get(s, "reset_limit")) e.reset_limit = std::stoi(*n);
  if (auto n = Get(s, "elastic_timeout")) e.timeout_s = std::stoi(*n);
  if (auto range = Get(s, "blacklist_cooldown_range")) {
    std::istringstream in(*range);
    std::string lo, hi, extra;
    in >> lo >> hi >> extra;
    const std::string what = "--blacklist-cooldown-range";
    if (hi.empty() || !extra.empty()) {
      return Status::InvalidArgument(
          what, "takes two numbers of seconds, MIN MAX (got '" + *range + "')");
    }
    HVD_ASSIGN_OR_RETURN(int64_t l, ParseInt64(lo, what + " MIN", 1, kWeekS));
    HVD_ASSIGN_OR_RETURN(int64_t h, ParseInt64(hi, what + " MAX", 1, kWeekS));
    if (l > h) {
      return Status::InvalidArgument(what,
                                     "MIN " + lo + " is more than MAX " + hi);
    }
    e.cooldown_lo_s = static_cast<double>(l);
    e.cooldown_hi_s = static_cast<double>(h);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<LaunchOptions> ParseCommandLine(
    const std::vector<std::string>& args,
    const std::map<std::string, std::string>& env,
    const ReadFileFn& read_file) {
  Settings cli;
  std::map<std::string, std::string> set_by;  // key -> the flag that set it
  std::vector<std::string> notes, warnings;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string word = args[i];
    if (word == "--") {
      ++i;
      break;
    }
    if (!IsOption(word)) break;
    std::optional<std::string> inline_value;
    if (word.rfind("--", 0) == 0) {
      if (size_t eq = word.find('='); eq != std::string::npos) {
        inline_value = word.substr(eq + 1);
        word = word.substr(0, eq);
      }
    }
    HVD_ASSIGN_OR_RETURN(const FlagSpec* f, FindFlagOrAbbreviation(word));
    if (f == nullptr) {
      return Status::InvalidArgument(word,
                                     "unknown option (see horovodrun --help)");
    }
    if (!f->refused_why.empty()) {
      return Status::InvalidArgument(f->names[0], f->refused_why);
    }
    std::string value;
    if (f->kind == FlagKind::kSwitch) {
      if (inline_value) return Status::InvalidArgument(word, "takes no value");
      value = f->switch_value;
    } else if (inline_value) {
      value = *inline_value;
    } else if (i + static_cast<size_t>(f->values) < args.size()) {
      for (int k = 0; k < f->values; ++k) {
        value += (k ? " " : "") + args[++i];
      }
    } else {
      return Status::InvalidArgument(
          word, f->values == 1 ? "needs a value"
                               : "needs " + std::to_string(f->values) +
                                     " values (" + f->metavar + ")");
    }
    HVD_ASSIGN_OR_RETURN(std::string canonical, Canonical(*f, value, word));
    if (!f->ignored_why.empty()) {
      notes.push_back(f->names[0] + " ignored: " + f->ignored_why);
      continue;
    }
    // Two forms of one switch (--autotune and --no-autotune) on one command
    // line contradict each other, as in Horovod's argparse groups.
    if (auto by = set_by.find(f->key);
        f->kind == FlagKind::kSwitch && by != set_by.end() &&
        by->second != f->names[0] && cli[f->key] != canonical) {
      return Status::InvalidArgument(f->names[0],
                                     "conflicts with " + by->second);
    }
    set_by[f->key] = f->names[0];
    if (f->repeatable && cli.count(f->key)) {
      cli[f->key] += "," + canonical;
    } else {
      cli[f->key] = canonical;
    }
    if (f->key == "help" || f->key == "version" || f->key == "check_build") {
      LaunchOptions o;
      o.show_help = f->key == "help";
      o.show_version = f->key == "version";
      o.check_build = f->key == "check_build";
      return o;
    }
  }

  Settings s;
  if (auto cfg = Get(cli, "config_file")) {
    HVD_ASSIGN_OR_RETURN(std::string text, read_file(*cfg));
    HVD_RETURN_IF_ERROR(ReadConfigFile(text, *cfg, s, notes, warnings));
  }
  for (const auto& [k, v] : cli) s[k] = v;  // the command line wins

  LaunchOptions o;
  o.notes = std::move(notes);
  o.warnings = std::move(warnings);
  o.command.assign(args.begin() + i, args.end());
  HVD_RETURN_IF_ERROR(ParseElastic(s, o.elastic));
  auto np = Get(s, "num_proc");
  if (!np && o.elastic.min_np > 0) np = std::to_string(o.elastic.min_np);
  if (!np) {
    return Status::InvalidArgument(
        "-np", o.elastic.enabled
                   ? "is required: the number of processes to start with "
                     "(or give --min-np)"
                   : "is required: the number of processes");
  }
  o.num_proc = std::stoi(*np);
  if (o.elastic.enabled) {
    if (o.elastic.min_np == 0) o.elastic.min_np = o.num_proc;
    if (o.elastic.min_np > o.num_proc) {
      return Status::InvalidArgument(
          "--min-np " + std::to_string(o.elastic.min_np),
          "is more than -np " + *np + "; the job starts with -np processes");
    }
    if (o.elastic.max_np > 0 && o.elastic.max_np < o.num_proc) {
      return Status::InvalidArgument(
          "--max-np " + std::to_string(o.elastic.max_np),
          "is less than -np " + *np);
    }
  }
  if (o.command.empty()) {
    return Status::InvalidArgument(
        "command", "missing: give the program to run after the options");
  }
  // The flag, else the launcher's own HOROVOD_START_TIMEOUT, else the
  // table's default.
  HVD_ASSIGN_OR_RETURN(int64_t start_timeout,
                       settings::Reader(env).Int("start_timeout"));
  o.start_timeout_s = static_cast<int>(start_timeout);
  if (auto t = Get(s, "start_timeout")) o.start_timeout_s = std::stoi(*t);
  HVD_ASSIGN_OR_RETURN(int64_t join_timeout,
                       settings::Reader(env).Int("join_timeout"));
  o.join_timeout_s = static_cast<int>(join_timeout);
  if (auto t = Get(s, "join_timeout")) o.join_timeout_s = std::stoi(*t);
  o.verbose = On(s, "verbose");

  auto hosts = Get(s, "hosts");
  auto hostfile = Get(s, "hostfile");
  if (hosts && hostfile) {
    return Status::InvalidArgument("-H", "give -H or --hostfile, not both");
  }
  if (!o.elastic.discovery_script.empty() && (hosts || hostfile)) {
    return Status::InvalidArgument(
        "--host-discovery-script",
        "gives the hosts; drop " + std::string(hosts ? "-H" : "--hostfile"));
  }
  if (hosts) {
    HVD_ASSIGN_OR_RETURN(o.hosts, ParseHostList(*hosts));
    o.hosts_from = "-H " + *hosts;
  } else if (hostfile) {
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
    o.hosts_from = "-H localhost:" + *np;
  } else {
    o.hosts_from = "--host-discovery-script " + o.elastic.discovery_script;
  }

  if (auto l = Get(s, "launcher")) {
    o.launcher = *l == "SRUN" ? Launcher::kSrun : Launcher::kSsh;
    o.launcher_given = true;
  } else if (o.hosts_from == "the Slurm allocation") {
    o.launcher = Launcher::kSrun;
  }
  if (On(s, "mpi")) {
    if (o.launcher_given) {
      return Status::InvalidArgument("--mpi", "conflicts with --launcher");
    }
    if (On(s, "gloo")) {
      return Status::InvalidArgument("--mpi", "conflicts with --gloo");
    }
    if (o.elastic.enabled) {
      return Status::InvalidArgument(
          "--mpi",
          "an elastic job starts and stops workers one by one, "
          "itself; drop --mpi");
    }
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
  if (auto a = Get(s, "mpi_args")) {
    if (o.launcher != Launcher::kMpirun) {
      return Status::InvalidArgument("--mpi-args",
                                     "is for mpirun; give --mpi too");
    }
    HVD_ASSIGN_OR_RETURN(o.mpi_args, SplitWords(*a, "--mpi-args"));
  }
  if (auto t = Get(s, "launcher_cmd")) {
    HVD_ASSIGN_OR_RETURN(auto words, SplitWords(*t, "--launcher-cmd"));
    if (t->find("{host}") == std::string::npos || words.empty()) {
      return Status::InvalidArgument(
          "--launcher-cmd",
          "must name the host as {host}, e.g. 'kubectl exec -i {host} --' "
          "(got '" +
              *t + "')");
    }
    if (o.launcher != Launcher::kSsh) {
      return Status::InvalidArgument(
          "--launcher-cmd", std::string("conflicts with ") +
                                (o.launcher == Launcher::kMpirun
                                     ? "--mpi"
                                     : "--launcher srun (give --launcher "
                                       "ssh inside a Slurm allocation)"));
    }
    o.launcher_cmd = *t;
  }
  if (o.launcher == Launcher::kSrun && o.launcher_given &&
      !env.count("SLURM_JOB_ID")) {
    return Status::InvalidArgument(
        "--launcher srun",
        "starts workers in a Slurm allocation, and SLURM_JOB_ID is not set: "
        "run horovodrun under salloc or sbatch, or use --launcher ssh");
  }
  if (o.launcher == Launcher::kSrun && o.elastic.enabled) {
    if (o.launcher_given) {
      return Status::InvalidArgument(
          "--launcher srun",
          "an elastic job starts and stops workers one by one, over SSH; "
          "use --launcher ssh");
    }
    o.launcher = Launcher::kSsh;
  }
  if (auto p = Get(s, "ssh_port")) o.ssh_port = std::stoi(*p);
  if (auto k = Get(s, "ssh_identity_file")) o.ssh_identity_file = *k;
  if (auto c = Get(s, "ssh_host_key_check")) {
    o.host_key_check = *c == "STRICT"       ? HostKeyCheck::kStrict
                       : *c == "ACCEPT-NEW" ? HostKeyCheck::kAcceptNew
                                            : HostKeyCheck::kOff;
  }
  if (auto n = Get(s, "network_interface")) {
    std::stringstream in(*n);
    std::string item;
    while (std::getline(in, item, ',')) o.network_interfaces.push_back(item);
  }
  if (auto d = Get(s, "output_filename")) o.output_filename = *d;
  o.prefix_output_with_timestamp = On(s, "prefix_output_with_timestamp");

  if (auto a = Get(s, "rendezvous_addr")) {
    HVD_RETURN_IF_ERROR(ParseHostPort(*a, "--rendezvous-addr").status());
    o.rendezvous_addr = *a;
  }
  o.rendezvous_token_file = Get(s, "rendezvous_token_file").value_or("");
  o.rendezvous_tls_ca = Get(s, "rendezvous_tls_ca").value_or("");
  o.rendezvous_tls_cert = Get(s, "rendezvous_tls_cert").value_or("");
  o.rendezvous_tls_key = Get(s, "rendezvous_tls_key").value_or("");
  if (o.rendezvous_addr.empty()) {
    for (const std::string* f :
         {&o.rendezvous_token_file, &o.rendezvous_tls_ca,
          &o.rendezvous_tls_cert, &o.rendezvous_tls_key}) {
      if (!f->empty()) {
        return Status::InvalidArgument("--rendezvous-*",
                                       "these options need --rendezvous-addr");
      }
    }
  } else if (o.rendezvous_token_file.empty()) {
    return Status::InvalidArgument(
        "--rendezvous-addr",
        "needs --rendezvous-token-file with the daemon's admin token");
  }
  if (auto p = Get(s, "metrics_port")) {
    o.metrics_port = std::stoi(*p);
  } else if (auto e = env.find("HOROVOD_METRICS_PORT"); e != env.end()) {
    HVD_ASSIGN_OR_RETURN(
        int64_t port, ParseInt64(e->second, "HOROVOD_METRICS_PORT", 1, 65535));
    o.metrics_port = static_cast<int>(port);
  }
  o.monitor = On(s, "monitor");
  if (auto i = Get(s, "monitor_interval")) {
    if (!o.monitor) {
      return Status::InvalidArgument("--monitor-interval",
                                     "is for --monitor; give it too");
    }
    o.monitor_interval_s = std::stoi(*i);
  }
  if ((o.metrics_port > 0 || o.monitor) && !o.rendezvous_addr.empty()) {
    return Status::InvalidArgument(
        o.monitor ? "--monitor" : "--metrics-port",
        "the workers' metrics reach horovodrun through its own rendezvous; "
        "drop --rendezvous-addr");
  }
  if (o.elastic.enabled && !o.rendezvous_addr.empty()) {
    return Status::InvalidArgument(
        "--rendezvous-addr",
        "an elastic job's membership is kept by horovodrun's own "
        "rendezvous; drop --rendezvous-addr");
  }
  if (o.rendezvous_tls_cert.empty() != o.rendezvous_tls_key.empty()) {
    return Status::InvalidArgument("--rendezvous-tls-cert/--rendezvous-tls-key",
                                   "give both or neither");
  }
  if (!o.rendezvous_tls_cert.empty() && o.rendezvous_tls_ca.empty()) {
    return Status::InvalidArgument("--rendezvous-tls-cert",
                                   "needs --rendezvous-tls-ca");
  }
  HVD_ASSIGN_OR_RETURN(o.worker_env, WorkerEnv(s));
  return o;
}

std::string HelpText() {
  std::string out =
      "usage: horovodrun -np N [options] command [args...]\n\n"
      "Starts N copies of command on the hosts given, gives each its rank "
      "through an\nauthenticated rendezvous, and supervises them: output is "
      "prefixed with the\nrank, and the first failure stops the whole job.\n";
  std::vector<std::string> groups;
  for (const FlagSpec& f : FlagTable()) {
    if (std::find(groups.begin(), groups.end(), f.group) == groups.end()) {
      groups.push_back(f.group);
    }
  }
  for (const std::string& g : groups) {
    out += "\n" + g + ":\n";
    for (const FlagSpec& f : FlagTable()) {
      if (f.group != g || f.hidden) continue;
      std::string names;
      for (const std::string& n : f.names) {
        names += (names.empty() ? "" : ", ") + n;
      }
      if (!f.metavar.empty()) names += " " + f.metavar;
      std::string line = "  " + names;
      if (line.size() < 38) {
        line.resize(38, ' ');
      } else {
        line += "\n" + std::string(38, ' ');
      }
      std::string help = f.help;
      if (!f.default_value.empty() && f.kind != FlagKind::kSwitch) {
        help += " (" + f.default_value + ")";
      }
      out += line + help + "\n";
    }
  }
  return out;
}

// The Horovod release whose command line, config files and output this
// horovodrun follows: -v and -cb say it first, as Horovod's would, and
// hvd's own version after.
constexpr char kHorovodVersion[] = "0.28.1";
constexpr char kHvdVersion[] = "0.1.0";

std::string VersionText() {
  return std::string(kHorovodVersion) + "\nhvd " + kHvdVersion +
         " (horovodrun compatible with Horovod " + kHorovodVersion + ")";
}

std::string CheckBuildText() {
#ifdef HVD_WITH_NCCL
  const char* nccl = "X";
#else
  const char* nccl = " ";
#endif
  // Horovod's listing first, line for line; then what hvd adds.
  return std::string("Horovod v") + kHorovodVersion +
         ":\n\n"
         "Available Frameworks:\n"
         "    [ ] TensorFlow\n"
         "    [ ] PyTorch\n"
         "    [ ] MXNet\n\n"
         "Available Controllers:\n"
         "    [ ] MPI\n"
         "    [X] Gloo\n\n"
         "Available Tensor Operations:\n"
         "    [" +
         nccl +
         "] NCCL\n"
         "    [ ] DDL\n"
         "    [ ] CCL\n"
         "    [ ] MPI\n"
         "    [X] Gloo\n\n"
         "hvd v" +
         kHvdVersion +
         " adds:\n"
         "    [X] C++ (libhvd)\n"
         "    [X] Shared memory\n";
}

}  // namespace hvd::launcher
