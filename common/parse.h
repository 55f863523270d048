// Strict parsing of numbers and environment variables.
//
// Every number that reaches hvd from a flag or an environment variable goes
// through here: the whole string must be the number, in range, or the caller
// gets an InvalidArgument naming the setting (never a silent 0).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace hvd {

// `what` names the setting in the error ("-np", "HOROVOD_RANK").
StatusOr<int64_t> ParseInt64(std::string_view text, std::string_view what,
                             int64_t min, int64_t max);
StatusOr<double> ParseDouble(std::string_view text, std::string_view what,
                             double min, double max);
// "0,4,8": numbers in [min, max] separated by commas (none empty).
StatusOr<std::vector<int64_t>> ParseIntList(std::string_view text,
                                            std::string_view what, int64_t min,
                                            int64_t max);
// Accepts 1/0, true/false, yes/no, on/off (any case).
StatusOr<bool> ParseBool(std::string_view text, std::string_view what);

// `text` split into words as a POSIX shell would, with '...', "..." and
// backslashes, but no expansions (--mpi-args, --launcher-cmd). `what`
// names the setting in the error about an unterminated quote.
StatusOr<std::vector<std::string>> SplitWords(const std::string& text,
                                              const std::string& what);

// The variable's value, or nullopt when it is unset. An empty value counts
// as set.
std::optional<std::string> GetEnv(const char* name);

// Parses `name` when set; returns `fallback` when unset.
StatusOr<int64_t> EnvInt64(const char* name, int64_t fallback, int64_t min,
                           int64_t max);
// The value of a variable that must be set and non-empty.
StatusOr<std::string> RequireEnv(const char* name, std::string_view hint);

}  // namespace hvd
