// Every worker in one process that starts them all on the plan's hosts:
// an srun step of the job's Slurm allocation (SrunRunner) or mpirun
// (MpirunRunner). The workers get the job-wide variables; each finds its
// place in the plan from its task index (worker_env::kTaskHosts), and its
// output lines carry the program's task labels.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "launcher/hosts.h"
#include "launcher/plan.h"
#include "launcher/runners/runner.h"

namespace hvd::launcher {

class StepRunner : public Runner {
 public:
  explicit StepRunner(RunnerContext context) : context_(std::move(context)) {}

  Status Prepare() override;
  StatusOr<std::unique_ptr<JobRendezvous>> OpenRendezvous() override;
  StatusOr<Launch> Workers(JobRendezvous& job) override;

 protected:
  // The program that starts the workers, as PATH finds it (an error says
  // what to install), after any other check of programs.
  virtual StatusOr<std::string> FindStarter() = 0;
  // The starter's name ("srun"), where the launcher's lines name a host.
  virtual std::string program() const = 0;
  // The flag that asked for this way, for errors ("--mpi").
  virtual std::string flag() const = 0;
  // How the launcher's lines say the workers run ("started by mpirun").
  virtual std::string how() const = 0;
  // The address of `host` as seen from here; "" when it cannot be told.
  virtual std::string HostAddress(const std::string& host) = 0;
  // The starter's command line for `hosts` (the plan's, in rank order);
  // may add to the step's environment.
  virtual StatusOr<std::vector<std::string>> StarterArgv(
      const std::vector<HostSpec>& hosts,
      std::vector<std::string>& step_env) = 0;
  virtual std::shared_ptr<const TaskOutputFormat> Format() const = 0;

  const RunnerContext context_;
  LaunchPlan plan_;
  std::string starter_;

 private:
  // Where the workers' hosts reach this machine; "" when all are local.
  StatusOr<std::string> AddressForWorkers();

  std::string us_;
};

}  // namespace hvd::launcher
