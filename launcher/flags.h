// The table of horovodrun's flags: names, value kinds and ranges, the
// YAML key of --config-file, the worker variable each one sets, and help.
// One table drives parsing, the config file, the environment and --help,
// so a flag cannot be wired in one place and forgotten in another. The
// tuning flags are the settings table's (common/settings.h), which the
// workers read too.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/setting_keys.h"
#include "common/settings.h"

namespace hvd::launcher {

// A flag is a setting (common/settings.h): the worker's settings come from
// that table, and the flags only the launcher has are declared beside them
// in flags.cc with the same fields.
using FlagKind = settings::Kind;
using FlagSpec = settings::Setting;

// Every flag: the launcher's own, then the workers' settings that have a
// flag, in --help order.
const std::vector<FlagSpec>& FlagTable();
// The spec with this name ("-np", "--fusion-threshold-mb"), or null.
const FlagSpec* FindFlag(const std::string& name);
// The same, or the one long flag that `word` is a prefix of (argparse's
// abbreviations: "--fusion-thresh"); null when none, and InvalidArgument
// naming the candidates when several.
StatusOr<const FlagSpec*> FindFlagOrAbbreviation(const std::string& word);
// The first spec that stores under `key` ("min_np"), or null.
const FlagSpec* FindFlagByKey(const std::string& key);
// The spec whose YAML key is "section.key", or null.
const FlagSpec* FindYamlKey(const std::string& section_key);

// Checks `value` against the flag's kind and range and returns its
// canonical text (integers normalised, choices upper-case, switches "1" or
// "0"). `what` names the flag or config key in errors.
StatusOr<std::string> CanonicalValue(const FlagSpec& f,
                                     const std::string& value,
                                     const std::string& what);

// A key of the flag table. Code names one through a constant of `key`
// below, never a string, so a misspelled key does not compile; a test
// checks that every constant is a key of the table.
class FlagKey {
 public:
  constexpr explicit FlagKey(const char* name) : name_(name) {}
  const char* name() const { return name_; }

 private:
  const char* name_;
};

namespace key {
// The launcher's own flags.
inline constexpr FlagKey kHelp{"help"};
inline constexpr FlagKey kVersion{"version"};
inline constexpr FlagKey kCheckBuild{"check_build"};
inline constexpr FlagKey kAnalyze{"analyze"};
inline constexpr FlagKey kConfigFile{"config_file"};
inline constexpr FlagKey kNumProc{"num_proc"};
inline constexpr FlagKey kHosts{"hosts"};
inline constexpr FlagKey kHostfile{"hostfile"};
inline constexpr FlagKey kVerbose{"verbose"};
inline constexpr FlagKey kGloo{"gloo"};
inline constexpr FlagKey kMpi{"mpi"};
inline constexpr FlagKey kMpiArgs{"mpi_args"};
inline constexpr FlagKey kLauncher{"launcher"};
inline constexpr FlagKey kLauncherCmd{"launcher_cmd"};
inline constexpr FlagKey kSshPort{"ssh_port"};
inline constexpr FlagKey kSshIdentityFile{"ssh_identity_file"};
inline constexpr FlagKey kSshHostKeyCheck{"ssh_host_key_check"};
inline constexpr FlagKey kOutputFilename{"output_filename"};
inline constexpr FlagKey kPrefixTimestamp{"prefix_output_with_timestamp"};
inline constexpr FlagKey kRendezvousAddr{"rendezvous_addr"};
inline constexpr FlagKey kRendezvousTokenFile{"rendezvous_token_file"};
inline constexpr FlagKey kRendezvousTlsCa{"rendezvous_tls_ca"};
inline constexpr FlagKey kRendezvousTlsCert{"rendezvous_tls_cert"};
inline constexpr FlagKey kRendezvousTlsKey{"rendezvous_tls_key"};
inline constexpr FlagKey kMetricsPort{"metrics_port"};
inline constexpr FlagKey kMonitor{"monitor"};
inline constexpr FlagKey kMonitorInterval{"monitor_interval"};
inline constexpr FlagKey kTcp{"tcp"};
inline constexpr FlagKey kMinNp{"min_np"};
inline constexpr FlagKey kMaxNp{"max_np"};
inline constexpr FlagKey kHostDiscoveryScript{"host_discovery_script"};
inline constexpr FlagKey kSlotsPerHost{"slots_per_host"};
inline constexpr FlagKey kResetLimit{"reset_limit"};
inline constexpr FlagKey kBlacklistCooldownRange{"blacklist_cooldown_range"};
// Settings of the workers' table the launcher reads too, named as the
// table's typed keys name them.
inline constexpr FlagKey kStartTimeout{settings::key::kStartTimeout.name};
inline constexpr FlagKey kJoinTimeout{settings::key::kJoinTimeout.name};
inline constexpr FlagKey kElasticTimeout{settings::key::kElasticTimeout.name};
inline constexpr FlagKey kNetworkInterface{
    settings::key::kNetworkInterface.name};
inline constexpr FlagKey kStallWarningSeconds{
    settings::key::kStallWarningTime.name};
inline constexpr FlagKey kStallShutdownSeconds{
    settings::key::kStallShutdownTime.name};
inline constexpr FlagKey kNoStallCheck{settings::key::kNoStallCheck.name};
inline constexpr FlagKey kLogWithoutTimestamp{
    settings::key::kLogWithoutTimestamp.name};
}  // namespace key

// Every constant above (for the test that checks them against the table).
inline constexpr FlagKey kAllFlagKeys[] = {
    key::kHelp,
    key::kVersion,
    key::kCheckBuild,
    key::kAnalyze,
    key::kConfigFile,
    key::kNumProc,
    key::kHosts,
    key::kHostfile,
    key::kVerbose,
    key::kGloo,
    key::kMpi,
    key::kMpiArgs,
    key::kLauncher,
    key::kLauncherCmd,
    key::kSshPort,
    key::kSshIdentityFile,
    key::kSshHostKeyCheck,
    key::kOutputFilename,
    key::kPrefixTimestamp,
    key::kRendezvousAddr,
    key::kRendezvousTokenFile,
    key::kRendezvousTlsCa,
    key::kRendezvousTlsCert,
    key::kRendezvousTlsKey,
    key::kMetricsPort,
    key::kMonitor,
    key::kMonitorInterval,
    key::kTcp,
    key::kMinNp,
    key::kMaxNp,
    key::kHostDiscoveryScript,
    key::kSlotsPerHost,
    key::kResetLimit,
    key::kBlacklistCooldownRange,
    key::kStartTimeout,
    key::kJoinTimeout,
    key::kElasticTimeout,
    key::kNetworkInterface,
    key::kStallWarningSeconds,
    key::kStallShutdownSeconds,
    key::kNoStallCheck,
    key::kLogWithoutTimestamp,
};

// The flags given (on the command line, in the config file): key ->
// canonical value.
class FlagValues {
 public:
  std::optional<std::string> Get(FlagKey k) const { return Find(k.name()); }
  // A switch given as on.
  bool On(FlagKey k) const { return Get(k) == std::optional<std::string>("1"); }
  bool Has(FlagKey k) const { return Find(k.name()).has_value(); }
  void Set(FlagKey k, std::string value) {
    values_[k.name()] = std::move(value);
  }
  // By the table's spec, for code that walks the table.
  std::optional<std::string> Get(const FlagSpec& f) const {
    return Find(f.key);
  }
  void Set(const FlagSpec& f, std::string value) {
    values_[f.key] = std::move(value);
  }
  // Takes every value of `over`, replacing its own (the command line wins
  // over the config file).
  void Override(const FlagValues& over) {
    for (const auto& [k, v] : over.values_) values_[k] = v;
  }

 private:
  std::optional<std::string> Find(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }

  std::map<std::string, std::string> values_;
};

}  // namespace hvd::launcher
