// The one table of hvd's settings.
//
// Every setting a worker reads from its environment is declared here once:
// the launcher's flag, the HOROVOD_* (or HVD_*) variable, the key of
// horovodrun's --config-file, the unit, the default, the range and the help
// text. horovodrun's parser, its config file and --help read this table
// (launcher/flags.h adds the flags only the launcher has), and so does the
// worker's configuration (runtime/worker_config.h), so a default is written
// in one place and a unit is converted in one place (env_scale).
//
// Flow of a setting: table -> flag or YAML -> canonical text in the flag's
// unit -> the worker's variable (times env_scale) -> Reader -> the one
// component that uses it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace hvd::settings {

enum class Kind {
  kInt,     // whole number in [min, max]
  kDouble,  // number in [dmin, dmax]
  kString,  // any non-empty text
  kChoice,  // one of `choices` (case-insensitive, stored upper case)
  kSwitch,  // a flag without a value; the variable holds 1 or 0
  kIntList  // comma-separated whole numbers in [min, max]
};

struct Setting {
  std::string key;                 // e.g. "fusion_threshold_mb"
  std::vector<std::string> names;  // flags, canonical first; may be empty
  Kind kind = Kind::kString;
  int64_t min = 0, max = 0;   // kInt, kIntList (in the flag's unit)
  double dmin = 0, dmax = 0;  // kDouble
  std::vector<std::string> choices;
  std::string yaml;  // "section.key" in --config-file, "" when none
  std::string env;   // the worker's variable, "" when none
  // The flag's unit ("MB", "ms", "s"), and what the variable holds per
  // unit of the flag: HOROVOD_FUSION_THRESHOLD is bytes, the flag MB.
  std::string unit;
  int64_t env_scale = 1;
  // In the flag's unit; "" when unset means "decided at run time" (the
  // help says how).
  std::string default_value;
  std::string group;  // heading in --help
  std::string metavar;
  std::string help;         // without the default, which --help appends
  bool repeatable = false;  // given several times, values join with ','
  // Words the flag takes (argparse's nargs), joined with ' ' as its value.
  int values = 1;
  // Flags only (launcher/flags.h): what a kSwitch stores under `key` ("0"
  // for the --no- forms); a flag accepted but meaningless for hvd, with
  // why (one --verbose line); a flag refused, with why; a flag --help
  // leaves out (Horovod hides its deprecated and negative forms too).
  std::string switch_value = "1";
  std::string ignored_why;
  std::string refused_why;
  bool hidden = false;
};

// A setting named in code (the constants of common/setting_keys.h). `T` is
// what Reader::Get and Default give for it, in the variable's unit, a
// duration as a std::chrono type (converted from the row's unit here, and
// nowhere else).
template <typename T>
struct Key {
  const char* name;
};

// The worker's settings, in --help order.
const std::vector<Setting>& Table();
// The setting with this key; a key missing from the table is a programming
// error and aborts.
const Setting& Get(std::string_view key);

template <typename T>
const Setting& Get(Key<T> key) {
  return Get(std::string_view(key.name));
}

// The default of a number or duration setting, as Reader::Get gives it.
// Option structs of the components initialise from these, so that a
// default is written in the table alone.
template <typename T>
T Default(Key<T> key);
template <>
int64_t Default(Key<int64_t> key);
template <>
double Default(Key<double> key);
template <>
std::chrono::seconds Default(Key<std::chrono::seconds> key);
template <>
std::chrono::microseconds Default(Key<std::chrono::microseconds> key);

using EnvMap = std::map<std::string, std::string>;
// This process's environment as a map.
EnvMap ProcessEnv();

// Reads settings from an environment map, strictly: a value that does not
// parse or is out of range is InvalidArgument naming the variable; a
// variable that is unset or empty gives the table's default.
class Reader {
 public:
  // Keeps a reference: `env` must outlive the reader (a temporary would
  // not, so none is taken).
  explicit Reader(const EnvMap& env) : env_(env) {}
  explicit Reader(EnvMap&&) = delete;

  // The value: numbers in the variable's unit (the flag's times
  // env_scale), durations as their type; an optional bool is nullopt when
  // neither given nor defaulted; a choice is upper case, and a string ""
  // when neither given nor defaulted.
  template <typename T>
  StatusOr<T> Get(Key<T> key) const;
  // The variable is set to a non-empty value.
  template <typename T>
  bool Given(Key<T> key) const {
    return Given(std::string_view(key.name));
  }
  // The raw text of a given variable.
  std::optional<std::string> Text(Key<std::string> key) const {
    return Text(std::string_view(key.name));
  }
  // Reads the row `key` as its kind, for what goes through the whole
  // table (the fuzz target): whether its value parses.
  Status CheckRow(std::string_view key) const;

 private:
  bool Given(std::string_view key) const;
  std::optional<std::string> Text(std::string_view key) const;
  StatusOr<int64_t> Int(std::string_view key) const;
  StatusOr<double> Double(std::string_view key) const;
  StatusOr<std::optional<bool>> OptionalBool(std::string_view key) const;
  StatusOr<std::string> Choice(std::string_view key) const;
  StatusOr<std::vector<int64_t>> IntList(std::string_view key) const;
  std::string String(std::string_view key) const;
  // The given text, else the default converted to the variable's unit.
  std::optional<std::string> Value(const Setting& s) const;
  const EnvMap& env_;
};

template <>
StatusOr<int64_t> Reader::Get(Key<int64_t> key) const;
template <>
StatusOr<double> Reader::Get(Key<double> key) const;
template <>
StatusOr<bool> Reader::Get(Key<bool> key) const;
template <>
StatusOr<std::optional<bool>> Reader::Get(Key<std::optional<bool>> key) const;
template <>
StatusOr<std::string> Reader::Get(Key<std::string> key) const;
template <>
StatusOr<std::vector<int64_t>> Reader::Get(Key<std::vector<int64_t>> key) const;
template <>
StatusOr<std::chrono::seconds> Reader::Get(Key<std::chrono::seconds> key) const;
template <>
StatusOr<std::chrono::microseconds> Reader::Get(
    Key<std::chrono::microseconds> key) const;

}  // namespace hvd::settings
