// Leveled logging to stderr, one whole line per write so that lines of
// several threads never interleave.
//
// The level comes from HOROVOD_LOG_LEVEL (TRACE, DEBUG, INFO, WARNING, ERROR,
// FATAL; WARNING by default); HOROVOD_LOG_HIDE_TIME hides the timestamp. The
// runtime sets a prefix such as "rank 3" so every line says who wrote it.
#pragma once

#include <map>
#include <sstream>
#include <string>
#include <string_view>

#include "common/status.h"

namespace hvd {

enum class LogLevel { kTrace = 0, kDebug, kInfo, kWarning, kError, kFatal };

StatusOr<LogLevel> ParseLogLevel(std::string_view text);
std::string_view LogLevelName(LogLevel level);

// Applies HOROVOD_LOG_LEVEL and HOROVOD_LOG_HIDE_TIME from `env` where
// given (common/settings.h); an invalid level is an error the caller
// reports.
Status ConfigureLogging(const std::map<std::string, std::string>& env);
void SetLogLevel(LogLevel level);
void SetLogPrefix(std::string prefix);
bool LogEnabled(LogLevel level);
void LogLine(LogLevel level, std::string_view message);

namespace internal {
class LogMessage {
 public:
  explicit LogMessage(LogLevel level) : level_(level) {}
  ~LogMessage() { LogLine(level_, stream_.str()); }
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};
}  // namespace internal

}  // namespace hvd

#define HVD_LOG(level)                                 \
  if (!::hvd::LogEnabled(::hvd::LogLevel::k##level)) { \
  } else                                               \
    ::hvd::internal::LogMessage(::hvd::LogLevel::k##level).stream()
