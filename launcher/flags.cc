#include "launcher/flags.h"

#include <algorithm>

#include "common/parse.h"

namespace hvd::launcher {
namespace {

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
  const std::string kLog = "logging and output";
  const std::string kElastic = "elastic";
  std::vector<FlagSpec> t = {
      Int({"-np", "--num-proc", "-n"}, "num_proc", 1, 1 << 20, kGeneral,
          "number of processes to run (required)"),
      Switch({"-h", "--help"}, "help", kGeneral, "show this help and exit"),
      Switch({"-v", "--version"}, "version", kGeneral,
             "show the version and exit"),
      Switch({"-cb", "--check-build"}, "check_build", kGeneral,
             "list the controllers and tensor operations built in, and exit"),
      Str({"--analyze"}, "analyze", "DIR", kGeneral,
          "report what the flight recorder dumps in DIR (rank.N.json, as "
          "SIGUSR1 to horovodrun writes them) say about a hung job, and "
          "exit"),
      Str({"--config-file"}, "config_file", "FILE", kGeneral,
          "YAML file of settings (sections params, autotune, timeline, "
          "stall_check, library_options, logging); a flag on the command "
          "line wins"),
      Switch({"--gloo"}, "gloo", kGeneral,
             "start the workers with horovodrun itself (the default); "
             "collectives run on Gloo either way"),
      Switch({"--mpi"}, "mpi", kGeneral,
             "start the workers with OpenMPI's mpirun (-H and --hostfile "
             "become its -H; collectives stay on Gloo)"),
      Str({"--mpi-args"}, "mpi_args", "ARGS", kGeneral,
          "more arguments for mpirun, as one string (with --mpi)"),
      Switch({"--verbose"}, "verbose", kGeneral, "say what the launcher does"),
      Str({"-H", "--hosts"}, "hosts", "H:S,...", kHosts,
          "hosts and slots, e.g. a:2,b:4, [::1]:2, user@c:1 (default "
          "localhost:NP)"),
      Str({"-hostfile", "--hostfile"}, "hostfile", "FILE", kHosts,
          "host file: lines 'host slots=N' (max_slots= accepted, # comments)"),
      Str({"--launcher"}, "launcher", "ssh|srun", kHosts,
          "how remote workers start: srun (one step; the default inside a "
          "Slurm allocation given no -H or --hostfile) or ssh"),
      Str({"--launcher-cmd"}, "launcher_cmd", "TEMPLATE", kHosts,
          "start remote workers through this command instead of SSH, "
          "{host} standing for the host, stdin passed through (e.g. "
          "'kubectl exec -i {host} --', 'docker exec -i {host}')"),
      Int({"-p", "--ssh-port"}, "ssh_port", 1, 65535, kSsh,
          "SSH port of the remote hosts (22)"),
      Str({"-i", "--ssh-identity-file"}, "ssh_identity_file", "FILE", kSsh,
          "private key for SSH (default: ssh-agent, then ~/.ssh/id_*)"),
      Str({"--ssh-host-key-check"}, "ssh_host_key_check", "POLICY", kSsh,
          "strict, accept-new (default: add unknown hosts to known_hosts, "
          "refuse changed keys) or off"),
      Str({"--rendezvous-addr"}, "rendezvous_addr", "HOST:PORT[,...]", kRdv,
          "use a running hvd-rendezvousd (several sharing an etcd prefix: "
          "the next when one cannot be reached)"),
      Str({"--rendezvous-token-file"}, "rendezvous_token_file", "FILE", kRdv,
          "file with the daemon's admin token"),
      Str({"--rendezvous-tls-ca"}, "rendezvous_tls_ca", "FILE", kRdv,
          "CA that signed the daemon's certificate"),
      Str({"--rendezvous-tls-cert"}, "rendezvous_tls_cert", "FILE", kRdv,
          "client certificate, for mutual TLS"),
      Str({"--rendezvous-tls-key"}, "rendezvous_tls_key", "FILE", kRdv,
          "its private key"),
      // Elastic jobs (--elastic-timeout is a worker setting, in the
      // settings table). Any of the first three makes a job elastic.
      Str({"--host-discovery-script"}, "host_discovery_script", "FILE",
          kElastic,
          "program printing the current HOST:SLOTS lines; run every second",
          "elastic.host_discovery_script"),
      Int({"--min-np", "--min-num-proc"}, "min_np", 1, 1 << 20, kElastic,
          "fewest processes the job runs with (default: -np)",
          "elastic.min_np"),
      Int({"--max-np", "--max-num-proc"}, "max_np", 1, 1 << 20, kElastic,
          "most processes the job grows to (default: no limit)",
          "elastic.max_np"),
      Int({"--slots-per-host"}, "slots_per_host", 1, 1 << 20, kElastic,
          "slots of a host the discovery script prints without :SLOTS",
          "elastic.slots_per_host"),
      Int({"--reset-limit"}, "reset_limit", 0, 1 << 20, kElastic,
          "end the job after this many resets (default 0: no limit)",
          "elastic.reset_limit"),
      Str({"--blacklist-cooldown-range"}, "blacklist_cooldown_range", "MIN MAX",
          kElastic,
          "seconds a failed host stays out, doubling per failure from MIN "
          "up to MAX (default: for good)",
          "elastic.blacklist_cooldown_range"),
  };
  for (FlagSpec& f : t) {
    if (f.key == "blacklist_cooldown_range") f.values = 2;
  }
  for (FlagSpec& f : t) {
    if (f.key == "ssh_host_key_check") {
      f.kind = FlagKind::kChoice;
      f.choices = {"STRICT", "ACCEPT-NEW", "OFF"};
    }
    if (f.key == "launcher") {
      f.kind = FlagKind::kChoice;
      f.choices = {"SSH", "SRUN"};
    }
  }
  // The workers' settings, each with the flag that sets it, and the forms
  // that set them the other way (each stores its value under the same
  // key, so the command line wins over the config file either way).
  for (const settings::Setting& s : settings::Table()) {
    if (s.names.empty()) continue;
    t.push_back(s);
    if (s.key == "network_interface") {
      t.back().help += "; --network-interfaces a,b gives several at once";
      t.push_back(Str({"--network-interfaces"}, s.key, "IF,...", s.group,
                      "the same, several separated by commas"));
      t.back().repeatable = true;
    }
    auto negative = [&](const std::string& name, const std::string& value,
                        const std::string& help) {
      t.push_back(Switch({name}, s.key, s.group, help));
      t.back().switch_value = value;
    };
    if (s.key == "hierarchical_allreduce" ||
        s.key == "hierarchical_allgather") {
      negative("--no-" + s.names[0].substr(2), "0",
               "pin it off (autotune leaves it)");
    } else if (s.key == "autotune") {
      negative("--no-autotune", "0", "no autotuning (the default)");
      t.back().hidden = true;
    } else if (s.key == "timeline_mark_cycles") {
      negative("--no-timeline-mark-cycles", "0", "do not mark cycles");
      t.back().hidden = true;
    } else if (s.key == "no_stall_check") {
      negative("--stall-check", "0", "keep the stall check (the default)");
      t.back().hidden = true;
    } else if (s.key == "log_without_timestamp") {
      negative("--log-with-timestamp", "0", "log lines with timestamps");
      t.back().hidden = true;
      // Horovod's deprecated spellings of the two.
      negative("--log-hide-timestamp", "1", "as --log-without-timestamp");
      t.back().hidden = true;
      negative("--no-log-hide-timestamp", "0", "as --log-with-timestamp");
      t.back().hidden = true;
    }
  }
  const std::string kLib = "library";
  t.push_back(Switch({"--tcp"}, "tcp", kLib,
                     "TCP only: NCCL does not use InfiniBand "
                     "(NCCL_IB_DISABLE=1)"));
  // Horovod's flags that mean nothing for hvd: accepted, and said so.
  auto ignored = [&](FlagSpec f, const std::string& why) {
    f.ignored_why = why;
    f.hidden = true;
    t.push_back(std::move(f));
  };
  const std::string kMpi = "hvd's collectives run on Gloo, not MPI";
  ignored(Switch({"--disable-cache"}, "disable_cache", kGeneral, ""),
          "hvd keeps no cache of host checks: it checks every host at every "
          "launch (the response cache is --cache-capacity 0)");
  ignored(Switch({"--mpi-threads-disable"}, "mpi_threads_disable", kLib, ""),
          kMpi);
  ignored(Switch({"--no-mpi-threads-disable"}, "mpi_threads_disable", kLib, ""),
          kMpi);
  ignored(Str({"--binding-args"}, "binding_args", "ARGS", kLib, ""),
          "hvd binds with --bind-to (with --mpi, mpirun's binding goes in "
          "--mpi-args)");
  ignored(Switch({"--torus-allreduce"}, "torus_allreduce", kLib, ""),
          "hvd has no torus allreduce; its hierarchical allreduce is the "
          "two-level one");
  ignored(Switch({"--no-torus-allreduce"}, "torus_allreduce", kLib, ""),
          "hvd has no torus allreduce");
  // Horovod's flags hvd refuses, saying why.
  auto refused = [&](FlagSpec f, const std::string& why) {
    f.refused_why = why;
    f.hidden = true;
    t.push_back(std::move(f));
  };
  refused(Switch({"--jsrun"}, "jsrun", kGeneral, ""),
          "hvd starts workers itself (locally or over SSH), not through "
          "jsrun; drop --jsrun");
  t.push_back(Switch({"-prefix-timestamp", "--prefix-output-with-timestamp"},
                     "prefix_output_with_timestamp", kLog,
                     "put a timestamp in front of every line of output"));
  t.push_back(Str({"--output-filename"}, "output_filename", "DIR", kLog,
                  "also write DIR/rank.N/stdout and stderr"));
  t.push_back(Int({"--metrics-port"}, "metrics_port", 1, 65535, kLog,
                  "serve every rank's metrics at http://THIS-HOST:PORT/metrics "
                  "in Prometheus' format (HOROVOD_METRICS_PORT)"));
  t.push_back(Switch({"--monitor"}, "monitor", kLog,
                     "print each host's step time, allreduce share, bus "
                     "bandwidth, CPU and memory as the job runs, and a "
                     "summary with what to try at the end"));
  t.push_back(Int({"--monitor-interval"}, "monitor_interval", 1, 86400, kLog,
                  "seconds between --monitor's lines (10)"));
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

StatusOr<const FlagSpec*> FindFlagOrAbbreviation(const std::string& word) {
  if (const FlagSpec* exact = FindFlag(word)) return exact;
  // As argparse: a long flag may be shortened to any prefix that no other
  // long flag shares.
  if (word.rfind("--", 0) != 0 || word.size() < 3) {
    return static_cast<const FlagSpec*>(nullptr);
  }
  // Two spellings of one flag (--min-np, --min-num-proc) are one match.
  const FlagSpec* found = nullptr;
  int specs = 0;
  std::vector<std::string> matches;
  for (const FlagSpec& f : FlagTable()) {
    for (const std::string& n : f.names) {
      if (n.rfind("--", 0) == 0 && n.rfind(word, 0) == 0) {
        matches.push_back(n);
        if (found != &f) ++specs;
        found = &f;
      }
    }
  }
  if (specs > 1) {
    std::string list;
    for (const std::string& m : matches) list += (list.empty() ? "" : ", ") + m;
    return Status::InvalidArgument(word, "is ambiguous: it could be " + list);
  }
  return found;
}

const FlagSpec* FindFlagByKey(const std::string& key) {
  for (const FlagSpec& f : FlagTable()) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

const FlagSpec* FindYamlKey(const std::string& section_key) {
  for (const FlagSpec& f : FlagTable()) {
    if (!f.yaml.empty() && f.yaml == section_key) return &f;
  }
  return nullptr;
}

StatusOr<std::string> CanonicalValue(const FlagSpec& f,
                                     const std::string& value,
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
      std::string up = value;
      std::transform(up.begin(), up.end(), up.begin(), ::toupper);
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

}  // namespace hvd::launcher
