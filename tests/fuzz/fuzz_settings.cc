// The settings table's value parsers, as a worker reads its environment:
// each input line "N=VALUE" sets the variable of the table's Nth setting
// (so every setting is reachable), then the whole worker configuration and
// every setting's own accessor read them.
#include <cstdint>
#include <string>
#include <string_view>

#include "common/parse.h"
#include "common/settings.h"
#include "runtime/worker_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hvd;
  const auto& table = settings::Table();
  settings::EnvMap env;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? "" : text.substr(nl + 1);
    if (line.empty()) continue;
    const auto& s = table[static_cast<unsigned char>(line[0]) % table.size()];
    std::string_view value = line.substr(1);
    if (!value.empty() && value[0] == '=') value.remove_prefix(1);
    if (!s.env.empty()) env[s.env] = std::string(value);
    // The bare parsers too, on the same text.
    (void)ParseInt64(value, "value", INT64_MIN, INT64_MAX);
    (void)ParseDouble(value, "value", -1e308, 1e308);
    (void)ParseIntList(value, "value", 0, 1 << 20);
    (void)ParseBool(value, "value");
    (void)SplitWords(std::string(value), "value");
  }
  (void)runtime::WorkerConfig::FromEnv(env);
  settings::Reader reader(env);
  for (const auto& s : table) (void)reader.CheckRow(s.key);
  return 0;
}
