// horovodrun's command line and the files it names: the input is the
// words (split at NUL bytes); --config-file and --hostfile read the last
// word's bytes, so the YAML and host-file readers see them too.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "launcher/cli.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hvd;
  std::vector<std::string> words(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      words.emplace_back();
    } else {
      words.back().push_back(static_cast<char>(data[i]));
    }
  }
  const std::string file = words.back();
  words.pop_back();
  const std::map<std::string, std::string> env = {
      {"SLURM_JOB_ID", "1"},
      {"SLURM_JOB_NODELIST", "node[1-2]"},
      {"SLURM_TASKS_PER_NODE", "2(x2)"}};
  (void)launcher::ParseCommandLine(
      words, words.size() % 2 ? env : std::map<std::string, std::string>{},
      [&](const std::string&) -> StatusOr<std::string> { return file; });
  return 0;
}
