// Which runner a command line asks for: chosen once, here.
#include <cstdio>

#include "launcher/runners/elastic.h"
#include "launcher/runners/local_ssh.h"
#include "launcher/runners/mpirun.h"
#include "launcher/runners/runner.h"
#include "launcher/runners/srun.h"
#include "launcher/runners/template.h"

namespace hvd::launcher {

std::unique_ptr<Runner> ChooseRunner(const RunnerContext& context) {
  const LaunchOptions& options = context.options;
  if (options.elastic.enabled) return std::make_unique<ElasticRunner>(context);
  if (options.launcher == Launcher::kMpirun) {
    return std::make_unique<MpirunRunner>(context);
  }
  if (options.launcher == Launcher::kSrun) {
    // srun was asked for, or picked for a Slurm allocation: without it on
    // PATH, the allocation's hosts are reached over SSH instead.
    if (options.launcher_given || FindProgram(context, "srun").ok()) {
      return std::make_unique<SrunRunner>(context);
    }
    if (options.verbose) {
      std::fprintf(stderr,
                   "horovodrun: in a Slurm allocation but srun is not on "
                   "PATH; starting workers over SSH\n");
    }
  }
  if (!options.launcher_cmd.empty()) {
    return std::make_unique<TemplateRunner>(context);
  }
  return std::make_unique<LocalSshRunner>(context);
}

}  // namespace hvd::launcher
