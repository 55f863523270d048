#include "launcher/flags.h"

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
      Str({"-H", "--hosts"}, "hosts", "H:S,...", kHosts,
          "hosts and slots, e.g. a:2,b:4, [::1]:2, user@c:1 (default "
          "localhost:NP)"),
      Str({"--hostfile"}, "hostfile", "FILE", kHosts,
          "host file: lines 'host slots=N' (max_slots= accepted, # comments)"),
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
  };
  for (FlagSpec& f : t) {
    if (f.key == "ssh_host_key_check") {
      f.kind = FlagKind::kChoice;
      f.choices = {"STRICT", "ACCEPT-NEW", "OFF"};
    }
  }
  // The workers' settings, each with the flag that sets it.
  for (const settings::Setting& s : settings::Table()) {
    if (!s.names.empty()) t.push_back(s);
    // The --no- forms pin a default-on setting off, so autotune leaves it.
    if (s.key == "hierarchical_allreduce" ||
        s.key == "hierarchical_allgather") {
      t.push_back(Switch({"--no-" + s.names[0].substr(2)}, "no_" + s.key,
                         s.group, "pin it off (autotune leaves it)"));
    }
    if (s.key == "cache_capacity") {
      t.push_back(Switch({"--disable-cache"}, "disable_cache", s.group,
                         "disable the response cache (same as "
                         "--cache-capacity 0)"));
    }
  }
  t.push_back(Switch({"--prefix-output-with-timestamp"},
                     "prefix_output_with_timestamp", kLog,
                     "put a timestamp in front of every line of output"));
  t.push_back(Str({"--output-filename"}, "output_filename", "DIR", kLog,
                  "also write DIR/rank.N/stdout and stderr"));
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
