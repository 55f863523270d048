// The YAML files: horovodrun's --config-file (Horovod's sections) and
// hvd-rendezvousd's --config.
#include <cstdint>
#include <string>

#include "launcher/cli.h"
#include "rendezvous/daemon_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hvd;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto read = [&](const std::string&) -> StatusOr<std::string> { return text; };
  (void)launcher::ParseCommandLine(
      {"--config-file", "config.yaml", "-np", "2", "train"}, {}, read);
  (void)rendezvous::ParseDaemonConfig(
      {"--config", "rendezvousd.yaml", "--admin-token-file", "token"}, read);
  return 0;
}
