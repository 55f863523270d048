#include "common/parse.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace hvd {
namespace {

TEST(ParseInt64Test, AcceptsWholeNumbersInRange) {
  EXPECT_EQ(*ParseInt64("42", "n", 0, 100), 42);
  EXPECT_EQ(*ParseInt64("+7", "n", 0, 100), 7);
  EXPECT_EQ(*ParseInt64("-3", "n", -5, 5), -3);
}

TEST(ParseInt64Test, RejectsGarbageAndNamesTheSetting) {
  for (const char* bad : {"", "4x", "x4", " 4", "4 ", "1.5", "0x10"}) {
    auto r = ParseInt64(bad, "-np", 0, 100);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("-np"), std::string::npos);
  }
}

TEST(ParseInt64Test, RejectsOutOfRange) {
  auto r = ParseInt64("0", "-np", 1, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("between 1 and 10"), std::string::npos);
  EXPECT_FALSE(ParseInt64("99999999999999999999", "n", 0, 10).ok());
}

TEST(ParseDoubleTest, StrictAndRanged) {
  EXPECT_DOUBLE_EQ(*ParseDouble("0.8", "noise", 0, 1), 0.8);
  EXPECT_FALSE(ParseDouble("0.8x", "noise", 0, 1).ok());
  EXPECT_FALSE(ParseDouble("nan", "noise", 0, 1).ok());
  EXPECT_FALSE(ParseDouble("1.5", "noise", 0, 1).ok());
}

TEST(ParseIntListTest, NumbersSeparatedByCommas) {
  auto v = ParseIntList("0,4,12", "--cores", 0, 64);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, (std::vector<int64_t>{0, 4, 12}));
  EXPECT_EQ(*ParseIntList("7", "--cores", 0, 64), (std::vector<int64_t>{7}));
  for (const char* bad : {"", "1,", ",1", "1,,2", "0,x", "65", "-1"}) {
    auto r = ParseIntList(bad, "--cores", 0, 64);
    ASSERT_FALSE(r.ok()) << "'" << bad << "'";
    EXPECT_NE(r.status().ToString().find("--cores"), std::string::npos) << bad;
  }
}

TEST(ParseBoolTest, AcceptsCommonSpellings) {
  EXPECT_TRUE(*ParseBool("TRUE", "b"));
  EXPECT_TRUE(*ParseBool("1", "b"));
  EXPECT_FALSE(*ParseBool("off", "b"));
  EXPECT_FALSE(ParseBool("maybe", "b").ok());
}

TEST(EnvTest, UnsetUsesFallbackSetIsParsed) {
  unsetenv("HVD_TEST_ENV_INT");
  EXPECT_EQ(*EnvInt64("HVD_TEST_ENV_INT", 5, 0, 10), 5);
  setenv("HVD_TEST_ENV_INT", "7", 1);
  EXPECT_EQ(*EnvInt64("HVD_TEST_ENV_INT", 5, 0, 10), 7);
  setenv("HVD_TEST_ENV_INT", "seven", 1);
  EXPECT_FALSE(EnvInt64("HVD_TEST_ENV_INT", 5, 0, 10).ok());
  unsetenv("HVD_TEST_ENV_INT");
}

TEST(EnvTest, RequireEnvSaysWhatToDo) {
  unsetenv("HVD_TEST_REQUIRED");
  auto r = RequireEnv("HVD_TEST_REQUIRED", "start with horovodrun");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "HVD_TEST_REQUIRED: is not set; start with horovodrun");
}

}  // namespace
}  // namespace hvd
