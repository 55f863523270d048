// horovodrun's command line (and --config-file), parsed once and strictly
// into LaunchOptions. Pure: files and the environment are handed in.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/setting_keys.h"
#include "common/status.h"
#include "launcher/hosts.h"

namespace hvd::launcher {

enum class HostKeyCheck { kStrict, kAcceptNew, kOff };

// How workers on other hosts start: over SSH, in one srun step
// (--launcher), or by OpenMPI's mpirun (--mpi).
enum class Launcher { kSsh, kSrun, kMpirun };

// An elastic job: on when a discovery script, --min-np or --max-np is
// given. Its hosts come from the script, else from -H or --hostfile.
struct ElasticLaunchOptions {
  bool enabled = false;
  std::string discovery_script;  // empty: the fixed hosts
  int min_np = 0;                // resolved to -np when not given
  int max_np = 0;                // 0: no limit
  int slots_per_host = 0;        // 0: the script prints every host's slots
  int timeout_s = static_cast<int>(
      settings::Default(settings::key::kElasticTimeout).count());
  int reset_limit = 0;  // 0: no limit
  // --blacklist-cooldown-range; both 0: a failed host stays out for good.
  double cooldown_lo_s = 0, cooldown_hi_s = 0;
};

// Every field has Horovod's default. Tuning flags are not interpreted
// here: they become `worker_env`, the HOROVOD_* variables of the workers,
// and only the ones the user gave are set (the runtime owns the defaults).
struct LaunchOptions {
  int num_proc = 0;  // -np, required (elastic: to start with; --min-np)
  ElasticLaunchOptions elastic;
  std::vector<HostSpec> hosts;         // -H, --hostfile, Slurm, or localhost:NP
  std::string hosts_from = "default";  // "-H", "--hostfile FILE", "Slurm"
  // --start-timeout, else HOROVOD_START_TIMEOUT, else the settings table's.
  int start_timeout_s =
      static_cast<int>(settings::Default(settings::key::kStartTimeout).count());
  // --join-timeout (0: none): how long workers may take to join.
  int join_timeout_s = 0;
  bool verbose = false;

  Launcher launcher = Launcher::kSsh;
  bool launcher_given = false;  // else srun was picked for a Slurm allocation
  std::vector<std::string> mpi_args;  // --mpi-args, split as a shell would
  // --launcher-cmd: remote workers start through it instead of SSH.
  std::string launcher_cmd;
  int ssh_port = 22;              // -p
  std::string ssh_identity_file;  // -i
  HostKeyCheck host_key_check = HostKeyCheck::kAcceptNew;
  std::vector<std::string> network_interfaces;

  std::string output_filename;  // --output-filename DIR
  int metrics_port = 0;         // --metrics-port, HOROVOD_METRICS_PORT; 0: off
  bool monitor = false;         // --monitor
  int monitor_interval_s = 10;  // --monitor-interval
  bool prefix_output_with_timestamp = false;

  // A running hvd-rendezvousd instead of the embedded server.
  std::string rendezvous_addr;
  std::string rendezvous_token_file;  // admin token
  std::string rendezvous_tls_ca;
  std::string rendezvous_tls_cert;
  std::string rendezvous_tls_key;

  std::map<std::string, std::string> worker_env;
  // Flags and config keys accepted but meaningless for hvd, with why
  // (printed with --verbose); and what the config file held that hvd does
  // not know (always printed, one line each).
  std::vector<std::string> notes;
  std::vector<std::string> warnings;
  std::vector<std::string> command;  // everything after the options

  bool show_help = false;
  bool show_version = false;
  bool check_build = false;
  // --analyze DIR: report on the flight recorder dumps there, and exit.
  std::string analyze;
};

using ReadFileFn = std::function<StatusOr<std::string>(const std::string&)>;

// `args` excludes argv[0]. `env` supplies HOROVOD_START_TIMEOUT and the
// Slurm variables; `read_file` reads --hostfile and --config-file. Options
// end at the first word that is not an option (or at "--"); the rest is
// the command, as with Horovod's argparse REMAINDER. Errors name the flag,
// file or key and the bad value.
StatusOr<LaunchOptions> ParseCommandLine(
    const std::vector<std::string>& args,
    const std::map<std::string, std::string>& env, const ReadFileFn& read_file);

std::string HelpText();
std::string VersionText();
// What -cb prints: the controllers and tensor operations built in.
std::string CheckBuildText();

}  // namespace hvd::launcher
