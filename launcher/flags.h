// The table of horovodrun's flags: names, value kinds and ranges, the
// YAML key of --config-file, the worker variable each one sets, and help.
// One table drives parsing, the config file, the environment and --help,
// so a flag cannot be wired in one place and forgotten in another.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hvd::launcher {

enum class FlagKind {
  kInt,     // whole number in [min, max]
  kDouble,  // number in [dmin, dmax]
  kString,  // any non-empty text
  kChoice,  // one of `choices` (case-insensitive, stored upper case)
  kSwitch,  // no value; true when given
  kIntList  // comma-separated whole numbers >= 0
};

struct FlagSpec {
  std::vector<std::string> names;  // first is the canonical spelling
  std::string key;                 // settings key, e.g. "fusion_threshold_mb"
  FlagKind kind = FlagKind::kString;
  int64_t min = 0, max = 0;
  double dmin = 0, dmax = 0;
  std::vector<std::string> choices;
  std::string yaml;   // "section.key" in --config-file, "" when none
  std::string env;    // HOROVOD_* set on workers when given, "" when none
  std::string group;  // heading in --help
  std::string metavar;
  std::string help;         // includes the default
  bool repeatable = false;  // given several times, values join with ','
};

const std::vector<FlagSpec>& FlagTable();
// The spec with this name ("-np", "--fusion-threshold-mb"), or null.
const FlagSpec* FindFlag(const std::string& name);
// The spec whose YAML key is "section.key", or null.
const FlagSpec* FindYamlKey(const std::string& section_key);

}  // namespace hvd::launcher
