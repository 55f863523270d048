#include "launcher/step_output.h"

#include "launcher/mpirun.h"
#include "launcher/srun.h"

namespace hvd::launcher {

StepOutput::Line StepOutput::Take(Stream stream, const Piece& piece) {
  int& task = stream == Stream::kStdout ? out_task_ : err_task_;
  Line line;
  line.text = piece.text;
  if (task < 0 && !piece.continues) {
    int label = 0;
    size_t at = 0;
    const bool labelled = mpirun_ ? SplitMpirunLabel(line.text, &label, &at)
                                  : SplitSrunLabel(line.text, &label, &at);
    if (labelled && label < tasks_) {
      task = label;
      line.text.remove_prefix(at);
    }
  }
  line.task = task;
  if (!piece.end.empty()) task = -1;
  if (line.task < 0) {
    const std::string text(piece.text);
    std::string node, what;
    int rank = 0;
    if (ParseSrunTaskError(text, &node, &what)) {
      srun_said_ = "srun: " + node + ": " + what;
    } else if (ParseMpirunProcessName(text, &rank) && rank < tasks_ &&
               !mpirun_failed_) {
      mpirun_failed_ = rank;
    }
    return line;
  }
  int code = 0;
  if (stream == Stream::kStderr && ParseSrunExitMarker(line.text, &code)) {
    line.exit_code = code;
  }
  return line;
}

}  // namespace hvd::launcher
