// Every worker started by OpenMPI's mpirun (horovodrun --mpi), as
// Horovod's MPI mode does; the command line is mpirun_command.h's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "launcher/runners/step.h"

namespace hvd::launcher {

// mpirun's tags ("[1,3]<stdout>:text") and its report of the first
// failed process ("Process name: [[4,1],2]").
class MpirunOutputFormat : public TaskOutputFormat {
 public:
  std::string name() const override { return "mpirun"; }
  bool SplitLabel(std::string_view line, int* task,
                  size_t* text_at) const override;
  bool ExitMarker(std::string_view, int*) const override { return false; }
  bool TaskReport(std::string_view line, std::string* said,
                  std::optional<int>* task) const override;
};

class MpirunRunner : public StepRunner {
 public:
  using StepRunner::StepRunner;

 protected:
  StatusOr<std::string> FindStarter() override;
  std::string program() const override { return "mpirun"; }
  std::string flag() const override { return "--mpi"; }
  std::string how() const override { return "started by mpirun"; }
  std::string HostAddress(const std::string& host) override;
  StatusOr<std::vector<std::string>> StarterArgv(
      const std::vector<HostSpec>& hosts,
      std::vector<std::string>& step_env) override;
  std::shared_ptr<const TaskOutputFormat> Format() const override;
};

}  // namespace hvd::launcher
