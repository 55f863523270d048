// The table of horovodrun's flags: names, value kinds and ranges, the
// YAML key of --config-file, the worker variable each one sets, and help.
// One table drives parsing, the config file, the environment and --help,
// so a flag cannot be wired in one place and forgotten in another. The
// tuning flags are the settings table's (common/settings.h), which the
// workers read too.
#pragma once

#include <string>
#include <vector>

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

}  // namespace hvd::launcher
