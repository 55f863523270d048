#include "rendezvous/daemon_config.h"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "common/files.h"
#include "common/parse.h"

namespace hvd::rendezvous {
namespace {

// Every setting, by its flag name without the dashes.
const std::set<std::string>& Keys() {
  static const std::set<std::string> keys = {"listen",
                                             "admin-token-file",
                                             "tls-cert",
                                             "tls-key",
                                             "tls-client-ca",
                                             "log-level",
                                             "max-jobs",
                                             "max-keys-per-job",
                                             "max-value-bytes",
                                             "max-job-bytes",
                                             "job-ttl-seconds",
                                             "shutdown-grace-seconds",
                                             "metrics-port",
                                             "state-dir",
                                             "discard-damaged-state",
                                             "store",
                                             "etcd-prefix",
                                             "etcd-ca",
                                             "etcd-cert",
                                             "etcd-key",
                                             "etcd-user",
                                             "etcd-password-file",
                                             "etcd-lease-seconds"};
  return keys;
}

// Settings that are switches: on the command line they take no value
// (--name, or --name=true|false); in the file, true or false.
bool IsSwitch(const std::string& key) { return key == "discard-damaged-state"; }

std::string Normalize(std::string key) {
  for (char& c : key) {
    if (c == '_') c = '-';
  }
  return key;
}

Status Apply(DaemonConfig& c, const std::string& key, const std::string& value,
             const std::string& where) {
  std::string what = where + key;
  auto size_setting = [&](size_t& out, int64_t max) -> Status {
    HVD_ASSIGN_OR_RETURN(int64_t n, ParseInt64(value, what, 1, max));
    out = static_cast<size_t>(n);
    return Status::Ok();
  };
  if (key == "listen") {
    c.listen = value;
  } else if (key == "admin-token-file") {
    c.admin_token_file = value;
  } else if (key == "tls-cert") {
    c.tls_cert = value;
  } else if (key == "tls-key") {
    c.tls_key = value;
  } else if (key == "tls-client-ca") {
    c.tls_client_ca = value;
  } else if (key == "log-level") {
    auto level = ParseLogLevel(value);
    if (!level.ok()) return level.status().WithContext(what);
    c.log_level = *level;
  } else if (key == "max-jobs") {
    return size_setting(c.limits.max_jobs, 1 << 20);
  } else if (key == "max-keys-per-job") {
    return size_setting(c.limits.max_keys_per_job, 1LL << 30);
  } else if (key == "max-value-bytes") {
    return size_setting(c.limits.max_value_bytes, 1LL << 30);
  } else if (key == "max-job-bytes") {
    return size_setting(c.limits.max_job_bytes, 1LL << 40);
  } else if (key == "job-ttl-seconds") {
    HVD_ASSIGN_OR_RETURN(int64_t n, ParseInt64(value, what, 0, 7 * 86400));
    c.limits.job_ttl_seconds = static_cast<int>(n);
  } else if (key == "shutdown-grace-seconds") {
    HVD_ASSIGN_OR_RETURN(int64_t n, ParseInt64(value, what, 0, 600));
    c.shutdown_grace_seconds = static_cast<int>(n);
  } else if (key == "metrics-port") {
    HVD_ASSIGN_OR_RETURN(int64_t n, ParseInt64(value, what, 1, 65535));
    c.metrics_port = static_cast<int>(n);
  } else if (key == "state-dir") {
    if (value.empty()) return Status::InvalidArgument(what, "is empty");
    c.state_dir = value;
  } else if (key == "discard-damaged-state") {
    if (value != "true" && value != "false") {
      return Status::InvalidArgument(
          what, "must be true or false, not '" + value + "'");
    }
    c.discard_damaged_state = value == "true";
  } else if (key == "store") {
    if (value.rfind("etcd://", 0) != 0) {
      return Status::InvalidArgument(
          what, "'" + value + "' is not a store; use etcd://HOST:PORT[,...]");
    }
    c.store = value;
  } else if (key == "etcd-prefix") {
    if (value.empty() || value.back() != '/') {
      return Status::InvalidArgument(what, "must end with '/'");
    }
    c.etcd_prefix = value;
  } else if (key == "etcd-ca") {
    c.etcd_ca = value;
  } else if (key == "etcd-cert") {
    c.etcd_cert = value;
  } else if (key == "etcd-key") {
    c.etcd_key = value;
  } else if (key == "etcd-user") {
    c.etcd_user = value;
  } else if (key == "etcd-password-file") {
    c.etcd_password_file = value;
  } else if (key == "etcd-lease-seconds") {
    HVD_ASSIGN_OR_RETURN(int64_t n, ParseInt64(value, what, 1, 600));
    c.etcd_lease_seconds = static_cast<int>(n);
  } else {
    return Status::InvalidArgument(what, "unknown setting");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::map<std::string, std::string>> ParseYamlSettings(
    const std::string& text, const std::string& where) {
  std::map<std::string, std::string> out;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(
        where, std::string("is not valid YAML: ") + e.what());
  }
  if (root.IsNull()) return out;
  if (!root.IsMap()) {
    return Status::InvalidArgument(where, "must be a mapping of settings");
  }
  for (const auto& entry : root) {
    // A key that is a list or a mapping is no setting's name (converting
    // it threw; fuzzing found the same in horovodrun's config reader).
    if (!entry.first.IsScalar()) {
      return Status::InvalidArgument(where, "has a key that is not a name");
    }
    std::string key = Normalize(entry.first.as<std::string>());
    if (!Keys().count(key)) {
      return Status::InvalidArgument(where + ": " + key, "unknown setting");
    }
    if (!entry.second.IsScalar()) {
      return Status::InvalidArgument(where + ": " + key, "must be a scalar");
    }
    out[key] = entry.second.as<std::string>();
  }
  return out;
}

StatusOr<DaemonConfig> ParseDaemonConfig(
    const std::vector<std::string>& args,
    const std::function<StatusOr<std::string>(const std::string&)>& read_file) {
  DaemonConfig c;
  c.limits.job_ttl_seconds = 30;
  std::map<std::string, std::string> flags;
  std::optional<std::string> config_file;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string word = args[i];
    if (word == "-h" || word == "--help") {
      c.show_help = true;
      return c;
    }
    if (word == "--version") {
      c.show_version = true;
      return c;
    }
    if (word.rfind("--", 0) != 0) {
      return Status::InvalidArgument(word, "unexpected argument (see --help)");
    }
    std::string key = word.substr(2);
    std::optional<std::string> value;
    if (size_t eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    }
    if (key != "config" && !Keys().count(key)) {
      return Status::InvalidArgument("--" + key, "unknown option (see --help)");
    }
    if (!value && IsSwitch(key)) value = "true";
    if (!value) {
      if (i + 1 >= args.size()) {
        return Status::InvalidArgument("--" + key, "needs a value");
      }
      value = args[++i];
    }
    if (key == "config") {
      config_file = *value;
    } else {
      flags[key] = *value;
    }
  }
  if (config_file) {
    HVD_ASSIGN_OR_RETURN(std::string text, read_file(*config_file));
    HVD_ASSIGN_OR_RETURN(auto settings, ParseYamlSettings(text, *config_file));
    for (const auto& [k, v] : settings) {
      if (flags.count(k)) continue;  // the command line wins
      HVD_RETURN_IF_ERROR(Apply(c, k, v, *config_file + ": "));
    }
  }
  for (const auto& [k, v] : flags) HVD_RETURN_IF_ERROR(Apply(c, k, v, "--"));
  if (c.admin_token_file.empty()) {
    return Status::InvalidArgument(
        "--admin-token-file",
        "is required: a file holding the token that creating jobs needs");
  }
  if (c.tls_cert.empty() != c.tls_key.empty()) {
    return Status::InvalidArgument("--tls-cert/--tls-key",
                                   "give both or neither");
  }
  if (!c.tls_client_ca.empty() && c.tls_cert.empty()) {
    return Status::InvalidArgument(
        "--tls-client-ca", "mutual TLS needs --tls-cert and --tls-key too");
  }
  if (!c.store.empty() && !c.state_dir.empty()) {
    return Status::InvalidArgument(
        "--store/--state-dir", "the jobs live in one store: give one of them");
  }
  if (c.store.empty() &&
      !(c.etcd_ca + c.etcd_cert + c.etcd_key + c.etcd_user).empty()) {
    return Status::InvalidArgument("--etcd-*",
                                   "only mean something with --store etcd://");
  }
  if (c.etcd_cert.empty() != c.etcd_key.empty()) {
    return Status::InvalidArgument("--etcd-cert/--etcd-key",
                                   "give both or neither");
  }
  if (!c.etcd_cert.empty() && c.etcd_ca.empty()) {
    return Status::InvalidArgument(
        "--etcd-cert",
        "TLS to etcd needs --etcd-ca, the CA that signed etcd's");
  }
  if (c.etcd_user.empty() != c.etcd_password_file.empty()) {
    return Status::InvalidArgument("--etcd-user/--etcd-password-file",
                                   "give both or neither");
  }
  return c;
}

std::string DaemonHelpText() {
  return R"(usage: hvd-rendezvousd --admin-token-file F [options]

The hvd rendezvous as a service: many jobs at once, each with its own
secret; creating a job needs the admin token.

  --listen HOST:PORT          address to serve on (default 127.0.0.1:29400;
                              port 0 picks one); logs "listening on HOST:PORT"
  --admin-token-file F        file with the admin token (mode 600 or stricter)
  --tls-cert F --tls-key F    serve TLS with this certificate and key
  --tls-client-ca F           require client certificates signed by this CA
  --config FILE               YAML with the same keys (a flag wins)
  --log-level LEVEL           TRACE, DEBUG, INFO, WARNING (default), ERROR, FATAL
  --job-ttl-seconds S         end a job after S s without keep-alive (30; 0 never)
  --max-jobs N                jobs at once (1000)
  --max-keys-per-job N        keys per job (1000000)
  --max-value-bytes N         bytes per value (4194304)
  --max-job-bytes N           bytes of keys and values per job (268435456)
  --shutdown-grace-seconds S  on SIGTERM, time for in-flight calls (5)
  --metrics-port P            serve its own metrics at :P/metrics (jobs,
                              workers, calls, latencies, refusals by reason)
  --state-dir DIR             keep the jobs in DIR across restarts (made
                              mode 700 if missing; default: systemd's
                              $STATE_DIRECTORY); without one they live in
                              memory only
  --discard-damaged-state     start empty when the state is damaged (it is
                              moved to DIR/damaged-TIME/, or in etcd under
                              PREFIX/damaged-TIME/) instead of refusing
  --store etcd://HOST:PORT[,HOST:PORT...]
                              keep the jobs in an etcd v3 cluster instead;
                              daemons on one --etcd-prefix serve its jobs one
                              at a time, the others standing by to take over
  --etcd-prefix P             etcd keys under P (default /hvd-rendezvous/)
  --etcd-ca F                 TLS to etcd, trusting the CA in F
  --etcd-cert F --etcd-key F  with this client certificate
  --etcd-user U --etcd-password-file F
                              etcd's auth as user U
  --etcd-lease-seconds S      how long a dead daemon keeps its standbys
                              waiting (3)
  --help, --version
)";
}

}  // namespace hvd::rendezvous
