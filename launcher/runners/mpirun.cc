#include "launcher/runners/mpirun.h"

#include <unistd.h>

#include "launcher/local_host.h"
#include "launcher/runners/mpirun_command.h"

namespace hvd::launcher {

bool MpirunOutputFormat::SplitLabel(std::string_view line, int* task,
                                    size_t* text_at) const {
  return SplitMpirunLabel(line, task, text_at);
}

bool MpirunOutputFormat::TaskReport(std::string_view line,
                                    std::string* /*said*/,
                                    std::optional<int>* task) const {
  int rank = 0;
  if (!ParseMpirunProcessName(line, &rank)) return false;
  *task = rank;
  return true;
}

StatusOr<std::string> MpirunRunner::FindStarter() {
  HVD_RETURN_IF_ERROR(CheckLocalCommand(context_, plan_));
  auto mpirun = FindProgram(context_, "mpirun");
  if (mpirun.ok()) return mpirun;
  return Status::NotFound("--mpi",
                          "mpirun is not on PATH (install OpenMPI: "
                          "openmpi-bin)");
}

std::string MpirunRunner::HostAddress(const std::string& host) {
  auto ip = ResolveAddress(host);
  return ip.ok() ? *ip : "";
}

StatusOr<std::vector<std::string>> MpirunRunner::StarterArgv(
    const std::vector<HostSpec>& hosts, std::vector<std::string>& step_env) {
  return MpirunArgv(starter_, hosts, MpirunExports(step_env),
                    context_.options.mpi_args, plan_.command, geteuid() == 0);
}

std::shared_ptr<const TaskOutputFormat> MpirunRunner::Format() const {
  return std::make_shared<MpirunOutputFormat>();
}

}  // namespace hvd::launcher
