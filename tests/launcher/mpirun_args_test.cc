#include <gtest/gtest.h>

#include "launcher/runners/mpirun_command.h"

namespace hvd::launcher {
namespace {

TEST(MpirunArgsTest, CommandLineCarriesNamesNotValues) {
  const std::vector<std::string> env = {"HOROVOD_RANK_X=1", "HVD_JOB_TOKEN=s",
                                        "NCCL_DEBUG=INFO",  "PATH=/bin",
                                        "HOME=/root",       "PYTHONPATH=/p"};
  const auto exports = MpirunExports(env);
  EXPECT_EQ(exports,
            (std::vector<std::string>{"HOROVOD_RANK_X", "HVD_JOB_TOKEN",
                                      "NCCL_DEBUG", "PATH", "PYTHONPATH"}));
  const auto argv = MpirunArgv("/usr/bin/mpirun", {{"a", 2, ""}, {"b", 1, ""}},
                               {"HVD_JOB_TOKEN"}, {"--mca", "btl", "tcp"},
                               {"train", "--lr", "1"}, true);
  const std::vector<std::string> want = {"/usr/bin/mpirun",
                                         "--allow-run-as-root",
                                         "--tag-output",
                                         "--bind-to",
                                         "none",
                                         "--map-by",
                                         "slot",
                                         "-np",
                                         "3",
                                         "-H",
                                         "a:2,b:1",
                                         "-x",
                                         "HVD_JOB_TOKEN",
                                         "--mca",
                                         "btl",
                                         "tcp",
                                         "train",
                                         "--lr",
                                         "1"};
  EXPECT_EQ(argv, want);
  for (const std::string& a : argv) {
    EXPECT_EQ(a.find('='), std::string::npos) << "a value on the command line";
  }
}

TEST(MpirunArgsTest, TagsAndTheFailureReport) {
  int rank = -1;
  size_t at = 0;
  const std::string line = "[1,12]<stderr>:boom";
  ASSERT_TRUE(SplitMpirunLabel(line, &rank, &at));
  EXPECT_EQ(rank, 12);
  EXPECT_EQ(line.substr(at), "boom");
  EXPECT_FALSE(SplitMpirunLabel("Primary job terminated", &rank, &at));
  ASSERT_TRUE(ParseMpirunProcessName("  Process name: [[2843,1],2]", &rank));
  EXPECT_EQ(rank, 2);
  EXPECT_FALSE(ParseMpirunProcessName("  Exit code:    3", &rank));
}

}  // namespace
}  // namespace hvd::launcher
