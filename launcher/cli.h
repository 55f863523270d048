// horovodrun's command line, parsed once and strictly into LaunchOptions.
// Pure: no I/O, no environment reads beyond the map handed in.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/hosts.h"

namespace hvd::launcher {

struct LaunchOptions {
  int num_proc = 0;             // -np, required
  std::vector<HostSpec> hosts;  // -H; default localhost:num_proc
  bool hosts_given = false;
  int start_timeout_s = 30;  // --start-timeout / HOROVOD_START_TIMEOUT
  bool verbose = false;      // --verbose
  // A running hvd-rendezvousd instead of the embedded server.
  std::string rendezvous_addr;        // --rendezvous-addr HOST:PORT
  std::string rendezvous_token_file;  // --rendezvous-token-file (admin token)
  std::string rendezvous_tls_ca;      // --rendezvous-tls-ca (PEM file)
  std::string rendezvous_tls_cert;    // --rendezvous-tls-cert (mutual TLS)
  std::string rendezvous_tls_key;     // --rendezvous-tls-key
  std::vector<std::string> command;   // everything after the options
  bool show_help = false;
  bool show_version = false;
};

// `args` excludes argv[0]. `env` supplies HOROVOD_START_TIMEOUT. Options
// end at the first word that is not an option (or at "--"); the rest is the
// command, as with Horovod's argparse REMAINDER.
StatusOr<LaunchOptions> ParseCommandLine(
    const std::vector<std::string>& args,
    const std::map<std::string, std::string>& env);

std::string HelpText();
std::string VersionText();

}  // namespace hvd::launcher
