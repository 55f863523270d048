// hvd-rendezvousd's configuration: flags and an optional YAML file with the
// same keys (a flag wins over the file). Parsed once, strictly: an unknown
// key, a bad number or a missing admin token file is an error naming it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/logging.h"
#include "common/status.h"
#include "rendezvous/job_table.h"

namespace hvd::rendezvous {

struct DaemonConfig {
  std::string listen = "127.0.0.1:29400";
  std::string admin_token_file;  // required
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  LogLevel log_level = LogLevel::kWarning;
  TableLimits limits;  // job_ttl_seconds defaults to 30 here
  int shutdown_grace_seconds = 5;
  int metrics_port = 0;  // 0: no metrics endpoint
  // Where the job table is kept across restarts; empty: in memory only.
  std::string state_dir;
  // Damaged state in state_dir is moved aside and the daemon starts empty,
  // instead of refusing to start.
  bool discard_damaged_state = false;
  // --store etcd://HOST:PORT[,...]: the jobs in etcd instead (empty: the
  // state directory, or memory), under etcd_prefix; TLS to etcd when
  // etcd_ca is set, etcd's auth when etcd_user is.
  std::string store;
  std::string etcd_prefix = "/hvd-rendezvous/";
  std::string etcd_ca, etcd_cert, etcd_key;
  std::string etcd_user, etcd_password_file;
  int etcd_lease_seconds = 3;
  bool show_help = false;
  bool show_version = false;
};

// `args` excludes argv[0]. `read_file` reads the --config file (injected so
// tests need no files).
StatusOr<DaemonConfig> ParseDaemonConfig(
    const std::vector<std::string>& args,
    const std::function<StatusOr<std::string>(const std::string&)>& read_file);

// Parses a YAML mapping of scalars into key -> value, for the keys of the
// command line (dashes or underscores). `where` names the file.
StatusOr<std::map<std::string, std::string>> ParseYamlSettings(
    const std::string& text, const std::string& where);

std::string DaemonHelpText();

}  // namespace hvd::rendezvous
