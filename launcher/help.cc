#include <string>

#include "launcher/cli.h"
#include "launcher/flags.h"

// What -h, -v and -cb print: Horovod 0.28.1's text first, hvd's after.

namespace hvd::launcher {

std::string HelpText() {
  std::string out =
      "usage: horovodrun -np N [options] command [args...]\n\n"
      "Starts N copies of command on the hosts given, gives each its rank "
      "through an\nauthenticated rendezvous, and supervises them: output is "
      "prefixed with the\nrank, and the first failure stops the whole job.\n";
  std::vector<std::string> groups;
  for (const FlagSpec& f : FlagTable()) {
    if (std::find(groups.begin(), groups.end(), f.group) == groups.end()) {
      groups.push_back(f.group);
    }
  }
  for (const std::string& g : groups) {
    out += "\n" + g + ":\n";
    for (const FlagSpec& f : FlagTable()) {
      if (f.group != g || f.hidden) continue;
      std::string names;
      for (const std::string& n : f.names) {
        names += (names.empty() ? "" : ", ") + n;
      }
      if (!f.metavar.empty()) names += " " + f.metavar;
      std::string line = "  " + names;
      if (line.size() < 38) {
        line.resize(38, ' ');
      } else {
        line += "\n" + std::string(38, ' ');
      }
      std::string help = f.help;
      if (!f.default_value.empty() && f.kind != FlagKind::kSwitch) {
        help += " (" + f.default_value + ")";
      }
      out += line + help + "\n";
    }
  }
  return out;
}

// The Horovod release whose command line, config files and output this
// horovodrun follows: -v and -cb say it first, as Horovod's would, and
// hvd's own version after.
constexpr char kHorovodVersion[] = "0.28.1";
constexpr char kHvdVersion[] = "0.1.0";

std::string VersionText() {
  return std::string(kHorovodVersion) + "\nhvd " + kHvdVersion +
         " (horovodrun compatible with Horovod " + kHorovodVersion + ")";
}

std::string CheckBuildText() {
#ifdef HVD_WITH_NCCL
  const char* nccl = "X";
#else
  const char* nccl = " ";
#endif
  // Horovod's listing first, line for line; then what hvd adds.
  return std::string("Horovod v") + kHorovodVersion +
         ":\n\n"
         "Available Frameworks:\n"
         "    [ ] TensorFlow\n"
         "    [ ] PyTorch\n"
         "    [ ] MXNet\n\n"
         "Available Controllers:\n"
         "    [ ] MPI\n"
         "    [X] Gloo\n\n"
         "Available Tensor Operations:\n"
         "    [" +
         nccl +
         "] NCCL\n"
         "    [ ] DDL\n"
         "    [ ] CCL\n"
         "    [ ] MPI\n"
         "    [X] Gloo\n\n"
         "hvd v" +
         kHvdVersion +
         " adds:\n"
         "    [X] C++ (libhvd)\n"
         "    [X] Shared memory\n";
}

}  // namespace hvd::launcher
