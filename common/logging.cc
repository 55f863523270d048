#include "common/logging.h"

#include <strings.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <mutex>

#include "common/parse.h"
#include "common/setting_keys.h"
#include "common/settings.h"

namespace hvd {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};
std::atomic<bool> g_with_time{true};
std::mutex g_prefix_mu;
std::string g_prefix;  // guarded by g_prefix_mu

constexpr std::string_view kNames[] = {"TRACE",   "DEBUG", "INFO",
                                       "WARNING", "ERROR", "FATAL"};

}  // namespace

StatusOr<LogLevel> ParseLogLevel(std::string_view text) {
  std::string s(text);
  for (int i = 0; i < 6; ++i) {
    if (strcasecmp(s.c_str(), std::string(kNames[i]).c_str()) == 0) {
      return static_cast<LogLevel>(i);
    }
  }
  return Status::InvalidArgument(
      "log level",
      "expected TRACE, DEBUG, INFO, WARNING, ERROR or FATAL, got '" + s + "'");
}

std::string_view LogLevelName(LogLevel level) {
  return kNames[static_cast<int>(level)];
}

Status ConfigureLogging(const settings::EnvMap& env) {
  const settings::Reader read(env);
  // Only what is given: a level a program set itself stays otherwise.
  if (read.Given(settings::key::kLogLevel)) {
    HVD_ASSIGN_OR_RETURN(std::string level, read.Get(settings::key::kLogLevel));
    HVD_ASSIGN_OR_RETURN(LogLevel parsed, ParseLogLevel(level));
    SetLogLevel(parsed);
  }
  if (read.Given(settings::key::kLogWithoutTimestamp)) {
    HVD_ASSIGN_OR_RETURN(bool hide,
                         read.Get(settings::key::kLogWithoutTimestamp));
    g_with_time = !hide;
  }
  return Status::Ok();
}

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

void SetLogPrefix(std::string prefix) {
  std::lock_guard<std::mutex> lock(g_prefix_mu);
  g_prefix = std::move(prefix);
}

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

void LogLine(LogLevel level, std::string_view message) {
  std::string line;
  line.reserve(message.size() + 64);
  if (g_with_time) {
    auto now = std::chrono::system_clock::now();
    std::time_t secs = std::chrono::system_clock::to_time_t(now);
    auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                      now.time_since_epoch())
                      .count() %
                  1000000;
    std::tm tm;
    gmtime_r(&secs, &tm);
    char buf[48];
    std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    line += "[";
    line += buf;
    char frac[16];
    std::snprintf(frac, sizeof(frac), ".%06lldZ",
                  static_cast<long long>(micros));
    line += frac;
    line += "] ";
  }
  line += "[";
  line += LogLevelName(level);
  line += "]";
  {
    std::lock_guard<std::mutex> lock(g_prefix_mu);
    if (!g_prefix.empty()) {
      line += " [";
      line += g_prefix;
      line += "]";
    }
  }
  line += " ";
  line += message;
  line += "\n";
  // One write(2) per line: atomic with respect to other writers of the pipe
  // for lines under PIPE_BUF, and never split by stdio buffering.
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace hvd
