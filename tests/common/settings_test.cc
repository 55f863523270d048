#include "common/settings.h"

#include <gtest/gtest.h>

#include <set>

#include "common/parse.h"

namespace hvd::settings {
namespace {

// The table is the one place a default, range or name is written: each
// entry must be whole and agree with itself.
TEST(SettingsTest, EveryEntryIsWholeAndItsDefaultInRange) {
  std::set<std::string> keys, envs, flags, yamls;
  for (const Setting& s : Table()) {
    SCOPED_TRACE(s.key);
    EXPECT_TRUE(keys.insert(s.key).second) << "key twice";
    ASSERT_FALSE(s.env.empty()) << "a worker setting needs its variable";
    EXPECT_TRUE(envs.insert(s.env).second) << "variable twice";
    for (const std::string& n : s.names) {
      EXPECT_EQ(n.rfind("--", 0), 0u) << n;
      EXPECT_TRUE(flags.insert(n).second) << n;
    }
    if (!s.yaml.empty()) {
      EXPECT_TRUE(yamls.insert(s.yaml).second);
    }
    EXPECT_FALSE(s.help.empty());
    EXPECT_FALSE(s.group.empty());
    EXPECT_GE(s.env_scale, 1);
    if (s.default_value.empty()) continue;
    switch (s.kind) {
      case Kind::kInt:
        EXPECT_TRUE(ParseInt64(s.default_value, s.key, s.min, s.max).ok());
        break;
      case Kind::kDouble:
        EXPECT_TRUE(ParseDouble(s.default_value, s.key, s.dmin, s.dmax).ok());
        break;
      case Kind::kSwitch:
        EXPECT_TRUE(ParseBool(s.default_value, s.key).ok());
        break;
      case Kind::kChoice:
        EXPECT_NE(
            std::find(s.choices.begin(), s.choices.end(), s.default_value),
            s.choices.end());
        break;
      default:
        break;
    }
  }
}

TEST(SettingsTest, ReaderConvertsUnitsOnceAndNamesTheVariable) {
  const EnvMap empty;
  Reader none(empty);
  EXPECT_EQ(*none.Int("fusion_threshold_mb"), 128LL << 20);
  EXPECT_FALSE(none.Given("fusion_threshold_mb"));
  EnvMap env = {{"HOROVOD_FUSION_THRESHOLD", "4096"},
                {"HOROVOD_HIERARCHICAL_ALLREDUCE", "no"},
                {"HVD_BIND_TO", "core"},
                {"HOROVOD_CYCLE_TIME", "2.5"}};
  Reader read(env);
  EXPECT_EQ(*read.Int("fusion_threshold_mb"), 4096);  // bytes, as given
  EXPECT_EQ(*read.OptionalBool("hierarchical_allreduce"),
            std::optional<bool>(false));
  EXPECT_EQ(*none.OptionalBool("hierarchical_allreduce"), std::nullopt);
  EXPECT_EQ(*read.Choice("bind_to"), "CORE");
  EXPECT_EQ(*read.Double("cycle_time_ms"), 2.5);
  env["HOROVOD_FUSION_THRESHOLD"] = "-1";
  auto bad = Reader(env).Int("fusion_threshold_mb");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("HOROVOD_FUSION_THRESHOLD"),
            std::string::npos);
  env["HVD_BIND_TO"] = "socket";
  auto choice = Reader(env).Choice("bind_to");
  ASSERT_FALSE(choice.ok());
  EXPECT_NE(choice.status().ToString().find("'socket'"), std::string::npos);
}

}  // namespace
}  // namespace hvd::settings
