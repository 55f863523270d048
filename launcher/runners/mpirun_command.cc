#include "launcher/runners/mpirun_command.h"

#include <regex>

namespace hvd::launcher {

std::vector<std::string> MpirunArgv(const std::string& mpirun,
                                    const std::vector<HostSpec>& hosts,
                                    const std::vector<std::string>& exports,
                                    const std::vector<std::string>& mpi_args,
                                    const std::vector<std::string>& command,
                                    bool as_root) {
  int np = 0;
  for (const HostSpec& h : hosts) np += h.slots;
  std::vector<std::string> argv = {mpirun};
  if (as_root) argv.push_back("--allow-run-as-root");
  for (const char* a :
       {"--tag-output", "--bind-to", "none", "--map-by", "slot"}) {
    argv.push_back(a);
  }
  argv.push_back("-np");
  argv.push_back(std::to_string(np));
  argv.push_back("-H");
  argv.push_back(FormatHostList(hosts));
  for (const std::string& name : exports) {
    argv.push_back("-x");
    argv.push_back(name);
  }
  argv.insert(argv.end(), mpi_args.begin(), mpi_args.end());
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::vector<std::string> MpirunExports(const std::vector<std::string>& env) {
  std::vector<std::string> out;
  for (const std::string& kv : env) {
    const std::string name = kv.substr(0, kv.find('='));
    if (name.rfind("HOROVOD_", 0) == 0 || name.rfind("HVD_", 0) == 0 ||
        name.rfind("NCCL_", 0) == 0 || name == "PATH" ||
        name == "LD_LIBRARY_PATH" || name == "PYTHONPATH") {
      out.push_back(name);
    }
  }
  return out;
}

bool SplitMpirunLabel(std::string_view line, int* rank, size_t* text_at) {
  static const std::regex kTag(R"(^\[\d+,(\d+)\]<std(out|err)>:)");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(line.begin(), line.end(), m, kTag)) return false;
  *rank = std::stoi(m[1].str());
  *text_at = static_cast<size_t>(m[0].length());
  return true;
}

bool ParseMpirunProcessName(std::string_view line, int* rank) {
  static const std::regex kName(R"(^\s*Process name:\s*\[\[\d+,\d+\],(\d+)\])");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(line.begin(), line.end(), m, kName)) return false;
  *rank = std::stoi(m[1].str());
  return true;
}

}  // namespace hvd::launcher
