#include "common/random.h"

#include <gtest/gtest.h>

#include <set>

namespace hvd {
namespace {

TEST(RandomHexTest, LengthAndAlphabet) {
  auto s = RandomHex(32);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->size(), 64u);
  EXPECT_EQ(s->find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(RandomHexTest, DistinctValues) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) seen.insert(*RandomHex(16));
  EXPECT_EQ(seen.size(), 100u);
}

TEST(ConstantTimeEqualsTest, ComparesContentAndLength) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "ab"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

}  // namespace
}  // namespace hvd
