// The output of one process that runs every worker as a task (an srun
// step, mpirun), told apart by task. How the program labels its tasks'
// lines and reports a failed task is its runner's to say
// (TaskOutputFormat, launcher/runners/); the supervisor knows no program
// by name. Pure: the supervisor feeds it pieces and writes what it returns.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/output.h"

namespace hvd::launcher {

// How one program's output tells its tasks apart.
class TaskOutputFormat {
 public:
  virtual ~TaskOutputFormat() = default;
  // What the launcher's lines call the process ("the srun step").
  virtual std::string name() const = 0;
  // A line that starts with a task's label: the task and where its text
  // starts, or false.
  virtual bool SplitLabel(std::string_view line, int* task,
                          size_t* text_at) const = 0;
  // A task's own stderr line that says its worker failed, with which
  // status; false for every other line.
  virtual bool ExitMarker(std::string_view text, int* code) const = 0;
  // A line of the program's own (no task label) about a failed task:
  // what to repeat when the program fails ("srun: node2: task 3:
  // Killed") and/or the task it names; false when it says neither.
  virtual bool TaskReport(std::string_view line, std::string* said,
                          std::optional<int>* task) const = 0;
};

// One process runs every task: task i is rank i, on hosts[i].
struct TaskStep {
  std::vector<std::string> hosts;
  std::shared_ptr<const TaskOutputFormat> format;
};

class StepOutput {
 public:
  StepOutput(int tasks, const TaskOutputFormat& format)
      : tasks_(tasks), format_(format) {}

  struct Line {
    int task = -1;          // -1: the program's own line, as it is
    std::string_view text;  // the piece's text without its label
    // A task's failure marker, with its status: nothing to print.
    std::optional<int> exit_code;
  };
  // One piece of `stream`; a piece continuing a line keeps its task.
  Line Take(Stream stream, const Piece& piece);

  // What the program said last about a task, to name the node when no
  // task said why it failed; "" when nothing.
  const std::string& program_said() const { return said_; }
  // The first failed task the program reported, if any.
  std::optional<int> failed_task() const { return failed_; }

 private:
  int tasks_;
  const TaskOutputFormat& format_;
  int out_task_ = -1, err_task_ = -1;  // mid-line: whose line it is
  std::string said_;
  std::optional<int> failed_;
};

}  // namespace hvd::launcher
