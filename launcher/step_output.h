// The output of one process that runs every worker (an srun step, mpirun),
// told apart by task: srun's labels ("3: ") or mpirun's tags
// ("[1,3]<stdout>:"), a task's failure marker (launcher/srun.h), and the
// launcher program's own lines about a failed task. Pure: the supervisor
// feeds it pieces and writes what it returns.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "launcher/output.h"

namespace hvd::launcher {

class StepOutput {
 public:
  StepOutput(int tasks, bool mpirun) : tasks_(tasks), mpirun_(mpirun) {}

  struct Line {
    int task = -1;          // -1: srun's or mpirun's own line, as it is
    std::string_view text;  // the piece's text without its label
    // A task's failure marker, with its status: nothing to print.
    std::optional<int> exit_code;
  };
  // One piece of `stream`; a piece continuing a line keeps its task.
  Line Take(Stream stream, const Piece& piece);

  // What srun said last about a task ("srun: node2: task 3: Killed"), to
  // name the node when no task said why it failed; "" when nothing.
  const std::string& srun_said() const { return srun_said_; }
  // The first failed process mpirun reported, if any.
  std::optional<int> mpirun_failed_rank() const { return mpirun_failed_; }

 private:
  int tasks_;
  bool mpirun_;
  int out_task_ = -1, err_task_ = -1;  // mid-line: whose line it is
  std::string srun_said_;
  std::optional<int> mpirun_failed_;
};

}  // namespace hvd::launcher
