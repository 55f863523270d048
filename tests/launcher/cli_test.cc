#include "launcher/cli.h"

#include <gtest/gtest.h>

namespace hvd::launcher {
namespace {

StatusOr<LaunchOptions> Parse(std::vector<std::string> args,
                              std::map<std::string, std::string> env = {}) {
  return ParseCommandLine(args, env);
}

TEST(CliTest, MinimalCommandDefaultsToLocalhost) {
  auto o = Parse({"-np", "4", "./train", "--lr", "0.1"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->num_proc, 4);
  EXPECT_EQ(o->hosts, (std::vector<HostSpec>{{"localhost", 4}}));
  EXPECT_EQ(o->command, (std::vector<std::string>{"./train", "--lr", "0.1"}));
  EXPECT_EQ(o->start_timeout_s, 30);
  EXPECT_FALSE(o->verbose);
}

TEST(CliTest, AllFlagsOfThisVersion) {
  auto o = Parse({"--num-proc=2", "-H", "a:1,b:1", "--gloo", "--start-timeout",
                  "5", "--verbose", "prog"});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->num_proc, 2);
  EXPECT_EQ(o->hosts.size(), 2u);
  EXPECT_EQ(o->start_timeout_s, 5);
  EXPECT_TRUE(o->verbose);
}

TEST(CliTest, OptionsStopAtTheCommandOrDoubleDash) {
  auto o = Parse({"-np", "1", "--", "--verbose"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->command, std::vector<std::string>{"--verbose"});
  EXPECT_FALSE(o->verbose);
  o = Parse({"-np", "1", "prog", "--verbose"});
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->verbose);
}

TEST(CliTest, StartTimeoutFromEnvironmentLosesToFlag) {
  auto o = Parse({"-np", "1", "p"}, {{"HOROVOD_START_TIMEOUT", "7"}});
  EXPECT_EQ(o->start_timeout_s, 7);
  o = Parse({"-np", "1", "--start-timeout", "9", "p"},
            {{"HOROVOD_START_TIMEOUT", "7"}});
  EXPECT_EQ(o->start_timeout_s, 9);
  EXPECT_FALSE(Parse({"-np", "1", "p"}, {{"HOROVOD_START_TIMEOUT", "x"}}).ok());
}

TEST(CliTest, HelpAndVersion) {
  EXPECT_TRUE(Parse({"--help"})->show_help);
  EXPECT_TRUE(Parse({"-h"})->show_help);
  EXPECT_TRUE(Parse({"--version"})->show_version);
  EXPECT_NE(HelpText().find("-np"), std::string::npos);
}

TEST(CliTest, ErrorsNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    const char* says;
  } cases[] = {
      {{"prog"}, "-np: is required"},
      {{"-np", "2"}, "command: missing"},
      {{"-np"}, "-np: needs a value"},
      {{"-np", "0", "p"}, "-np: must be between 1"},
      {{"-np", "two", "p"}, "expected an integer"},
      {{"-np", "1", "--bogus", "p"}, "--bogus: unknown option"},
      {{"-np", "1", "--verbose=yes", "p"}, "takes no value"},
      {{"-np", "1", "--start-timeout", "0", "p"}, "--start-timeout"},
      {{"-np", "1", "-H", "a:0", "p"}, "-H slots"},
      {{"-np", "1", "--mpi", "p"}, "--mpi"},
  };
  for (const Case& c : cases) {
    auto o = Parse(c.args);
    ASSERT_FALSE(o.ok()) << c.says;
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(o.status().message().find(c.says), std::string::npos)
        << o.status().message();
  }
}

}  // namespace
}  // namespace hvd::launcher
