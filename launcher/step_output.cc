#include "launcher/step_output.h"

namespace hvd::launcher {

StepOutput::Line StepOutput::Take(Stream stream, const Piece& piece) {
  int& task = stream == Stream::kStdout ? out_task_ : err_task_;
  Line line;
  line.text = piece.text;
  if (task < 0 && !piece.continues) {
    int label = 0;
    size_t at = 0;
    if (format_.SplitLabel(line.text, &label, &at) && label < tasks_) {
      task = label;
      line.text.remove_prefix(at);
    }
  }
  line.task = task;
  if (!piece.end.empty()) task = -1;
  if (line.task < 0) {
    std::string said;
    std::optional<int> failed;
    if (format_.TaskReport(piece.text, &said, &failed)) {
      if (!said.empty()) said_ = said;
      // The first report stands.
      if (failed && *failed < tasks_ && !failed_) failed_ = failed;
    }
    return line;
  }
  int code = 0;
  if (stream == Stream::kStderr && format_.ExitMarker(line.text, &code)) {
    line.exit_code = code;
  }
  return line;
}

}  // namespace hvd::launcher
