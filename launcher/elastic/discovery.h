// The host discovery script of an elastic job (--host-discovery-script):
// run through /bin/sh, its standard output parsed as HOST:SLOTS lines. A
// script that fails, hangs past its timeout or prints nonsense is logged
// and the last good answer is kept, as Horovod does.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/hosts.h"

namespace hvd::launcher::elastic {

// Runs `script` with /bin/sh -c in a process group of its own and returns
// its standard output (its standard error passes through). Past `timeout`
// the group is killed: DeadlineExceeded. A non-zero exit: Unavailable with
// the status.
StatusOr<std::string> RunScript(const std::string& script,
                                std::chrono::milliseconds timeout);

class HostDiscovery {
 public:
  // `default_slots`: --slots-per-host (0: every line must say its slots).
  HostDiscovery(std::string script, int default_slots,
                std::chrono::milliseconds timeout);

  // Runs the script once. Ok: its answer (also kept as the last good one).
  // An error says why; last() still holds the previous good answer.
  StatusOr<std::vector<HostSpec>> Poll();
  const std::vector<HostSpec>& last() const { return last_; }
  bool ever_answered() const { return answered_; }

 private:
  std::string script_;
  int default_slots_;
  std::chrono::milliseconds timeout_;
  std::vector<HostSpec> last_;
  bool answered_ = false;
};

}  // namespace hvd::launcher::elastic
