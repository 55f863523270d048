// Every worker as a task of one srun step in the job's Slurm allocation,
// each under `hvd-remote-exec --srun` (srun_step.h); task i runs on the
// plan's host of rank i (a SLURM_HOSTFILE the runner writes).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "launcher/runners/step.h"

namespace hvd::launcher {

// srun's labels ("3: text"), the task wrapper's failure marker, and
// srun's own lines about a task ("srun: error: node2: task 3: Killed").
class SrunOutputFormat : public TaskOutputFormat {
 public:
  std::string name() const override { return "the srun step"; }
  bool SplitLabel(std::string_view line, int* task,
                  size_t* text_at) const override;
  bool ExitMarker(std::string_view text, int* code) const override;
  bool TaskReport(std::string_view line, std::string* said,
                  std::optional<int>* task) const override;
};

class SrunRunner : public StepRunner {
 public:
  using StepRunner::StepRunner;
  ~SrunRunner() override;

 protected:
  StatusOr<std::string> FindStarter() override;
  std::string program() const override { return "srun"; }
  std::string flag() const override { return "--launcher srun"; }
  std::string how() const override { return "in one srun step"; }
  std::string HostAddress(const std::string& host) override;
  StatusOr<std::vector<std::string>> StarterArgv(
      const std::vector<HostSpec>& hosts,
      std::vector<std::string>& step_env) override;
  std::shared_ptr<const TaskOutputFormat> Format() const override;

 private:
  std::string hostfile_;  // removed when the runner goes
};

}  // namespace hvd::launcher
