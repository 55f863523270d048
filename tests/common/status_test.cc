#include "common/status.h"

#include <gtest/gtest.h>

namespace hvd {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, FactoryJoinsContextAndDetail) {
  Status s = Status::InvalidArgument("-np", "must be at least 1");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "-np: must be at least 1");
  EXPECT_EQ(s.ToString(), "invalid argument: -np: must be at least 1");
}

TEST(StatusTest, WithContextKeepsCode) {
  Status s =
      Status::NotFound("key 'x'", "has not been set").WithContext("rank 3");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "rank 3: key 'x': has not been set");
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
}

TEST(StatusTest, UpdateKeepsFirstError) {
  Status s;
  s.Update(Status::Ok());
  s.Update(Status::Internal("first"));
  s.Update(Status::Aborted("second"));
  EXPECT_EQ(s.message(), "first");
}

StatusOr<int> Half(int x) {
  if (x % 2) return Status::InvalidArgument("x", "is odd");
  return x / 2;
}

Status Quarter(int x, int* out) {
  HVD_ASSIGN_OR_RETURN(int half, Half(x));
  HVD_ASSIGN_OR_RETURN(*out, Half(half));
  return Status::Ok();
}

// An error's copies are whole and its own (an OK status holds nothing,
// an error its code and message): changing or dropping one leaves the
// other as it was; a moved status keeps the error.
TEST(StatusTest, CopiesAndMovesKeepTheError) {
  Status error = Status::NotFound("rank 3", "gone");
  Status copy = error;
  EXPECT_EQ(copy, error);
  EXPECT_EQ(copy.code(), StatusCode::kNotFound);
  EXPECT_EQ(copy.message(), "rank 3: gone");
  copy = Status::Ok();
  EXPECT_TRUE(copy.ok());
  EXPECT_EQ(copy.message(), "");
  EXPECT_EQ(error.ToString(), "not found: rank 3: gone");
  copy = error;
  error = Status::Aborted("x");
  EXPECT_EQ(copy.ToString(), "not found: rank 3: gone");
  copy = copy;  // NOLINT: assigned to itself on purpose
  EXPECT_EQ(copy.message(), "rank 3: gone");
  Status moved = std::move(copy);
  EXPECT_EQ(moved.code(), StatusCode::kNotFound);
  EXPECT_NE(moved, Status::Ok());
  // kOk with a message is OK.
  EXPECT_TRUE(Status(StatusCode::kOk, "fine").ok());
  EXPECT_EQ(Status(StatusCode::kOk, "fine"), Status::Ok());
}

TEST(StatusOrTest, ValueAndErrorPropagate) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = Quarter(6, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "x: is odd");
}

TEST(StatusOrDeathTest, ValueOfErrorAborts) {
  StatusOr<int> bad = Status::Internal("boom");
  EXPECT_DEATH((void)bad.value(), "boom");
}

}  // namespace
}  // namespace hvd
