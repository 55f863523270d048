#include "launcher/config_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <iterator>

#include "common/parse.h"

namespace hvd::launcher {
namespace {

// What the file says to log alongside the values it sets.
struct Log {
  std::vector<std::string>& notes;
  std::vector<std::string>& warnings;
};

// The value of one entry: a scalar, or for a flag of several words (a
// range) a YAML list of them, joined by spaces as on the command line.
StatusOr<std::string> EntryValue(const YAML::Node& node, const FlagSpec* spec,
                                 const std::string& where) {
  std::string value;
  if (spec != nullptr && spec->values > 1 && node.IsSequence()) {
    for (const auto& item : node) {
      if (!item.IsScalar()) {
        return Status::InvalidArgument(where, "must be a list of values");
      }
      value += (value.empty() ? "" : " ") + item.as<std::string>();
    }
    return value;
  }
  if (!node.IsScalar()) {
    return Status::InvalidArgument(where, "must be a single value");
  }
  return node.as<std::string>();
}

// One `key: value` of section `name`.
Status ReadEntry(const std::string& name, const YAML::Node& k,
                 const YAML::Node& v, const std::string& path, FlagValues& out,
                 Log& log) {
  const std::string key = k.as<std::string>();
  const std::string where = path + ": " + name + "." + key;
  const std::string full = name + "." + key;
  const FlagSpec* spec = FindYamlKey(full);
  HVD_ASSIGN_OR_RETURN(std::string value, EntryValue(v, spec, where));
  // Two keys are the inverse of a flag.
  if (full == "stall_check.enabled" || full == "logging.with_timestamp") {
    HVD_ASSIGN_OR_RETURN(bool b, ParseBool(value, where));
    out.Set(key == "enabled" ? key::kNoStallCheck : key::kLogWithoutTimestamp,
            b ? "0" : "1");
    return Status::Ok();
  }
  if (full == "library_options.mpi_threads_disable" ||
      full == "library_options.ccl_bgt_affinity") {
    log.notes.push_back(where + " ignored: hvd runs on Gloo, not MPI or CCL");
    return Status::Ok();
  }
  if (spec == nullptr) {
    log.warnings.push_back(where + ": unknown setting, ignored");
    return Status::Ok();
  }
  HVD_ASSIGN_OR_RETURN(std::string canonical,
                       CanonicalValue(*spec, value, where));
  out.Set(*spec, std::move(canonical));
  return Status::Ok();
}

// The top-level `controller: gloo|mpi`.
Status ReadController(const YAML::Node& v, const std::string& path,
                      FlagValues& out) {
  std::string c = v.as<std::string>();
  std::transform(c.begin(), c.end(), c.begin(), ::toupper);
  if (c == "MPI") {
    out.Set(key::kMpi, "1");  // mpirun starts the workers, as --mpi
    return Status::Ok();
  }
  if (c != "GLOO") {
    return Status::InvalidArgument(
        path + ": controller", "no such controller '" + v.as<std::string>() +
                                   "' (gloo is the one hvd runs)");
  }
  return Status::Ok();
}

Status ReadSections(const std::string& text, const std::string& path,
                    FlagValues& out, Log& log) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(
        path, std::string("is not valid YAML: ") + e.what());
  }
  if (root.IsNull()) return Status::Ok();
  if (!root.IsMap()) {
    return Status::InvalidArgument(path, "must be a mapping of sections");
  }
  static const char* const kSections[] = {
      "params",          "autotune", "timeline", "stall_check",
      "library_options", "logging",  "elastic"};
  for (const auto& section : root) {
    if (!section.first.IsScalar()) {
      return Status::InvalidArgument(path,
                                     "has a section name that is not a word");
    }
    const std::string name = section.first.as<std::string>();
    if (name == "controller" && section.second.IsScalar()) {
      HVD_RETURN_IF_ERROR(ReadController(section.second, path, out));
      continue;
    }
    if (std::none_of(std::begin(kSections), std::end(kSections),
                     [&](const char* k) { return name == k; })) {
      log.warnings.push_back(path + ": " + name +
                             ": not a section hvd knows, ignored");
      continue;
    }
    if (!section.second.IsMap()) {
      return Status::InvalidArgument(path + ": " + name,
                                     "must be a mapping of settings");
    }
    for (const auto& entry : section.second) {
      HVD_RETURN_IF_ERROR(
          ReadEntry(name, entry.first, entry.second, path, out, log));
    }
  }
  return Status::Ok();
}

}  // namespace

// Any conversion yaml-cpp refuses deep inside (a key that is a list, a
// value of the wrong shape) is the file's mistake, not a crash (found by
// fuzzing).
Status ReadConfigFile(const std::string& text, const std::string& path,
                      FlagValues& out, std::vector<std::string>& notes,
                      std::vector<std::string>& warnings) {
  Log log{notes, warnings};
  try {
    return ReadSections(text, path, out, log);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(
        path, std::string("is YAML of a shape hvd cannot read: ") + e.what());
  }
}

}  // namespace hvd::launcher
