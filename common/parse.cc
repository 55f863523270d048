#include "common/parse.h"

#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace hvd {

StatusOr<int64_t> ParseInt64(std::string_view text, std::string_view what,
                             int64_t min, int64_t max) {
  int64_t value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (!text.empty() && *first == '+') ++first;
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != last) {
    return Status::InvalidArgument(
        what, "expected an integer, got '" + std::string(text) + "'");
  }
  if (ec == std::errc::result_out_of_range || value < min || value > max) {
    return Status::InvalidArgument(
        what, "must be between " + std::to_string(min) + " and " +
                  std::to_string(max) + " (got " + std::string(text) + ")");
  }
  return value;
}

StatusOr<double> ParseDouble(std::string_view text, std::string_view what,
                             double min, double max) {
  std::string copy(text);
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size() || errno == ERANGE ||
      !std::isfinite(value)) {
    return Status::InvalidArgument(what,
                                   "expected a number, got '" + copy + "'");
  }
  if (value < min || value > max) {
    return Status::InvalidArgument(
        what, "must be between " + std::to_string(min) + " and " +
                  std::to_string(max) + " (got " + copy + ")");
  }
  return value;
}

StatusOr<std::vector<int64_t>> ParseIntList(std::string_view text,
                                            std::string_view what, int64_t min,
                                            int64_t max) {
  std::vector<int64_t> out;
  for (size_t at = 0; at <= text.size();) {
    size_t comma = std::min(text.find(',', at), text.size());
    if (comma == at) {
      return Status::InvalidArgument(
          what, "expected numbers separated by commas, got '" +
                    std::string(text) + "'");
    }
    HVD_ASSIGN_OR_RETURN(
        int64_t v, ParseInt64(text.substr(at, comma - at), what, min, max));
    out.push_back(v);
    at = comma + 1;
  }
  return out;
}

StatusOr<bool> ParseBool(std::string_view text, std::string_view what) {
  std::string s(text);
  for (const char* yes : {"1", "true", "yes", "on"}) {
    if (strcasecmp(s.c_str(), yes) == 0) return true;
  }
  for (const char* no : {"0", "false", "no", "off"}) {
    if (strcasecmp(s.c_str(), no) == 0) return false;
  }
  return Status::InvalidArgument(
      what, "expected true/false (or 1/0, yes/no, on/off), got '" + s + "'");
}

std::optional<std::string> GetEnv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

StatusOr<int64_t> EnvInt64(const char* name, int64_t fallback, int64_t min,
                           int64_t max) {
  auto value = GetEnv(name);
  if (!value) return fallback;
  return ParseInt64(*value, name, min, max);
}

StatusOr<std::string> RequireEnv(const char* name, std::string_view hint) {
  auto value = GetEnv(name);
  if (!value || value->empty()) {
    return Status::FailedPrecondition(
        name, std::string("is not set; ") + std::string(hint));
  }
  return *value;
}

StatusOr<std::vector<std::string>> SplitWords(const std::string& text,
                                              const std::string& what) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quote != 0) {
      if (ch == quote) {
        quote = 0;
      } else if (ch == '\\' && quote == '"' && i + 1 < text.size() &&
                 (text[i + 1] == '"' || text[i + 1] == '\\')) {
        word += text[++i];
      } else {
        word += ch;
      }
      continue;
    }
    if (ch == ' ' || ch == '\t' || ch == '\n') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (ch == '\'' || ch == '"') {
      quote = ch;
    } else if (ch == '\\' && i + 1 < text.size()) {
      word += text[++i];
    } else {
      word += ch;
    }
  }
  if (quote != 0) {
    return Status::InvalidArgument(
        what, std::string("has an unterminated ") + quote + " quote");
  }
  if (in_word) words.push_back(word);
  return words;
}

}  // namespace hvd
