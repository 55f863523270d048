#include "common/settings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "common/parse.h"
#include "common/setting_keys.h"

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
  EXPECT_EQ(*none.Get(key::kFusionThreshold), 128LL << 20);
  EXPECT_FALSE(none.Given(key::kFusionThreshold));
  EXPECT_EQ(*none.Get(key::kStartTimeout), std::chrono::seconds(30));
  EnvMap env = {{"HOROVOD_FUSION_THRESHOLD", "4096"},
                {"HOROVOD_HIERARCHICAL_ALLREDUCE", "no"},
                {"HVD_BIND_TO", "core"},
                {"HOROVOD_CYCLE_TIME", "2.5"},
                {"HOROVOD_START_TIMEOUT", "7"}};
  Reader read(env);
  EXPECT_EQ(*read.Get(key::kFusionThreshold), 4096);  // bytes, as given
  EXPECT_EQ(*read.Get(key::kHierarchicalAllreduce), std::optional<bool>(false));
  EXPECT_EQ(*none.Get(key::kHierarchicalAllreduce), std::nullopt);
  EXPECT_EQ(*read.Get(key::kBindTo), "CORE");
  // Durations in their type: milliseconds given as a number, seconds.
  EXPECT_EQ(*read.Get(key::kCycleTime), std::chrono::microseconds(2500));
  EXPECT_EQ(*read.Get(key::kStartTimeout), std::chrono::seconds(7));
  env["HOROVOD_FUSION_THRESHOLD"] = "-1";
  auto bad = Reader(env).Get(key::kFusionThreshold);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("HOROVOD_FUSION_THRESHOLD"),
            std::string::npos);
  EXPECT_FALSE(Reader(env).CheckRow("fusion_threshold_mb").ok());
  env["HVD_BIND_TO"] = "socket";
  auto choice = Reader(env).Get(key::kBindTo);
  ASSERT_FALSE(choice.ok());
  EXPECT_NE(choice.status().ToString().find("'socket'"), std::string::npos);
}

// Defaults in the accessors' types, from the rows' text and units.
TEST(SettingsTest, DefaultsComeInTheKeysTypes) {
  EXPECT_EQ(Default(key::kFusionThreshold), 128LL << 20);
  EXPECT_EQ(Default(key::kStartTimeout), std::chrono::seconds(30));
  EXPECT_EQ(Default(key::kCycleTime), std::chrono::microseconds(0));
  EXPECT_EQ(Default(key::kAutotuneNoise), 0.8);
}

// Every typed key names a row whose kind (and, for a duration, unit) fits
// its type, and every row has a key: code never names a setting by text.
TEST(SettingsTest, EveryKeyFitsItsRowAndEveryRowHasAKey) {
  std::set<std::string> named;
  for (const KeyShape& k : AllKeys()) {
    SCOPED_TRACE(k.name);
    EXPECT_TRUE(named.insert(k.name).second) << "key twice";
    const Setting& s = Get(std::string_view(k.name));
    EXPECT_NE(std::find(k.kinds.begin(), k.kinds.end(), s.kind), k.kinds.end());
    if (*k.time_unit) {
      EXPECT_EQ(s.unit, k.time_unit);
    } else {
      EXPECT_TRUE(s.unit != "s" && s.unit != "ms")
          << "a duration read as a plain number";
    }
  }
  for (const Setting& s : Table()) {
    EXPECT_TRUE(named.count(s.key)) << s.key << " has no typed key";
  }
}

}  // namespace
}  // namespace hvd::settings
