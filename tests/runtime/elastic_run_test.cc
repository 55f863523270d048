// hvd::elastic::run's resets on a job of one (no launcher): which failures
// reset and which end it, in the training function and in the state's
// sync alike (a peer can die while the state is being synced).
#include <gtest/gtest.h>

#include "hvd/elastic.h"
#include "hvd/hvd.h"

namespace hvd::elastic {
namespace {

// A state whose sync fails its first `fail_syncs` times with `failure`.
class FlakyState : public State {
 public:
  FlakyState(int fail_syncs, Status failure)
      : fail_syncs_(fail_syncs), failure_(std::move(failure)) {}
  int syncs = 0, restores = 0;

 protected:
  void save() override {}
  void load() override { ++restores; }
  Status broadcast() override {
    ++syncs;
    if (fail_syncs_ > 0) {
      --fail_syncs_;
      return failure_;
    }
    return Status::Ok();
  }

 private:
  int fail_syncs_;
  Status failure_;
};

class ElasticRunTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(hvd::init().ok()); }
  void TearDown() override { (void)hvd::shutdown(); }
};

TEST_F(ElasticRunTest, APeerLostDuringTheSyncIsAReset) {
  FlakyState state(1, Status::Unavailable("gloo broadcast", "peer closed"));
  int resets = 0, calls = 0;
  state.register_reset_callback([&] { ++resets; });
  Status s = run(state, [&](State&) {
    ++calls;
    return Status::Ok();
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(state.syncs, 2);
  EXPECT_EQ(resets, 1);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(hvd::is_initialized());
}

TEST_F(ElasticRunTest, ASyncErrorThatIsNoPeerLossEndsRun) {
  FlakyState state(1, Status::InvalidArgument("broadcast", "bad shape"));
  int calls = 0;
  Status s = run(state, [&](State&) {
    ++calls;
    return Status::Ok();
  });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(calls, 0);
}

TEST_F(ElasticRunTest, LostPeersResetUpToTheLimitThenGiveUp) {
  FlakyState state(0, Status::Ok());
  int calls = 0;
  Status s = run(
      state,
      [&](State&) {
        ++calls;
        return Status::Unavailable("allreduce", "peer closed");
      },
      2);
  EXPECT_EQ(s.code(), StatusCode::kAborted) << s.ToString();
  EXPECT_NE(s.message().find("gave up after 2 resets"), std::string::npos)
      << s.message();
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(state.syncs, 3);
}

}  // namespace
}  // namespace hvd::elastic
