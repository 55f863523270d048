#include "launcher/step_output.h"

#include <gtest/gtest.h>

#include "launcher/runners/mpirun.h"
#include "launcher/runners/srun.h"
#include "launcher/runners/srun_step.h"

namespace hvd::launcher {
namespace {

Piece Line(std::string_view text, bool continues = false) {
  return Piece{text, "\n", continues};
}

TEST(StepOutputTest, SrunLabelsMarkersAndItsOwnLines) {
  SrunOutputFormat srun;
  StepOutput out(4, srun);
  auto l = out.Take(Stream::kStdout, Line("2: hello"));
  EXPECT_EQ(l.task, 2);
  EXPECT_EQ(l.text, "hello");
  EXPECT_FALSE(l.exit_code);
  // A piece without an end keeps its task for the rest of the line.
  l = out.Take(Stream::kStdout, Piece{"1: part", "", false});
  EXPECT_EQ(l.task, 1);
  l = out.Take(Stream::kStdout, Line("7: no label, the same line"));
  EXPECT_EQ(l.task, 1);
  EXPECT_EQ(l.text, "7: no label, the same line");
  const std::string marker = "3: " + SrunExitMarker(5);
  l = out.Take(Stream::kStderr, Line(marker));
  EXPECT_EQ(l.task, 3);
  EXPECT_EQ(l.exit_code, 5);
  // A marker on stdout is only text.
  EXPECT_FALSE(out.Take(Stream::kStdout, Line(marker)).exit_code);
  // Labels past the tasks, and srun's own lines, belong to no task.
  EXPECT_EQ(out.Take(Stream::kStdout, Line("9: x")).task, -1);
  l = out.Take(Stream::kStderr, Line("srun: error: node2: task 3: Killed"));
  EXPECT_EQ(l.task, -1);
  EXPECT_EQ(out.program_said(), "srun: node2: task 3: Killed");
}

TEST(StepOutputTest, MpirunTagsAndItsReport) {
  MpirunOutputFormat mpirun;
  StepOutput out(3, mpirun);
  auto l = out.Take(Stream::kStderr, Line("[1,2]<stderr>:boom"));
  EXPECT_EQ(l.task, 2);
  EXPECT_EQ(l.text, "boom");
  EXPECT_EQ(out.Take(Stream::kStdout, Line("1: not mpirun's")).task, -1);
  EXPECT_FALSE(out.failed_task());
  out.Take(Stream::kStderr, Line("  Process name: [[4,1],1]"));
  out.Take(Stream::kStderr, Line("  Process name: [[4,1],2]"));
  EXPECT_EQ(out.failed_task(), 1);  // the first report stands
}

}  // namespace
}  // namespace hvd::launcher
