// The gRPC service on 127.0.0.1:0, through the real client.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "rendezvous/client.h"
#include "rendezvous/server.h"

namespace hvd::rendezvous {
namespace {

using std::chrono::milliseconds;

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.admin_token = "admin-secret";
    auto server = RendezvousServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    ASSERT_GT(server_->port(), 0);
    auto job = RendezvousClient::CreateJob(server_->address(), "admin-secret",
                                           {{"a", 2}, {"b", 1}}, 3,
                                           milliseconds(5000));
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    job_ = *job;
  }
  std::unique_ptr<RendezvousClient> Client(std::string token = "") {
    return RendezvousClient::Create(server_->address(), job_.job_id,
                                    token.empty() ? job_.token : token);
  }

  std::unique_ptr<RendezvousServer> server_;
  CreatedJob job_;
};

TEST_F(ServiceTest, CreateJobNeedsTheAdminToken) {
  auto wrong = RendezvousClient::CreateJob(server_->address(), "guess",
                                           {{"a", 1}}, 1, milliseconds(5000));
  EXPECT_EQ(wrong.status().code(), StatusCode::kUnauthenticated);
  auto missing = RendezvousClient::CreateJob(server_->address(), "", {{"a", 1}},
                                             1, milliseconds(5000));
  EXPECT_EQ(missing.status().code(), StatusCode::kUnauthenticated);
}

TEST_F(ServiceTest, CreateJobValidatesHosts) {
  auto bad = RendezvousClient::CreateJob(server_->address(), "admin-secret",
                                         {{"a", 1}}, 2, milliseconds(5000));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ServiceTest, JoinReturnsTheAssignment) {
  auto a = Client()->Join("b", 0, milliseconds(5000));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->rank, 2);
  EXPECT_EQ(a->size, 3);
  EXPECT_EQ(a->local_rank, 0);
  EXPECT_EQ(a->local_size, 1);
  EXPECT_EQ(a->cross_rank, 1);
  EXPECT_EQ(a->cross_size, 2);
  EXPECT_EQ(a->gpu, -1);
}

TEST_F(ServiceTest, WrongOrMissingTokenIsUnauthenticated) {
  auto wrong = Client("not-the-token");
  EXPECT_EQ(wrong->Join("a", 0, milliseconds(5000)).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(wrong->Set("k", "v").code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(wrong->Get("k").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(wrong->Wait({"k"}, milliseconds(100)).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(wrong->Barrier("b", 0, milliseconds(100)).code(),
            StatusCode::kUnauthenticated);
}

TEST_F(ServiceTest, UnknownJobIsNotFound) {
  auto c = RendezvousClient::Create(server_->address(), "nojob", job_.token);
  EXPECT_EQ(c->Get("k").status().code(), StatusCode::kNotFound);
}

TEST_F(ServiceTest, SetGetAndMissingKey) {
  auto c = Client();
  ASSERT_TRUE(c->Set("k", std::string("\0bin", 4)).ok());
  auto v = c->Get("k");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, std::string("\0bin", 4));
  auto missing = c->Get("nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("'nope'"), std::string::npos);
}

TEST_F(ServiceTest, WaitBlocksOnTheServerUntilSet) {
  auto waiter = Client();
  auto setter = Client();
  auto result = std::async(std::launch::async, [&] {
    return waiter->Wait({"x", "y"}, milliseconds(10000));
  });
  ASSERT_EQ(result.wait_for(milliseconds(200)), std::future_status::timeout);
  ASSERT_TRUE(setter->Set("y", "2").ok());
  ASSERT_TRUE(setter->Set("x", "1").ok());
  auto values = result.get();
  ASSERT_TRUE(values.ok()) << values.status().ToString();
  EXPECT_EQ(*values, (std::vector<std::string>{"1", "2"}));
}

TEST_F(ServiceTest, WaitTimesOutWithDeadlineExceeded) {
  auto start = std::chrono::steady_clock::now();
  auto r = Client()->Wait({"never"}, milliseconds(300));
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(r.status().message().find("'never'"), std::string::npos);
  EXPECT_GE(took, milliseconds(250));
  EXPECT_LT(took, milliseconds(5000));
}

TEST_F(ServiceTest, WaitRejectsBadTimeout) {
  // The client clamps to >= 1 ms, so talk of a zero timeout is only
  // possible through the server's own check; an empty key list is refused.
  EXPECT_EQ(Client()->Wait({}, milliseconds(100)).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(ServiceTest, BarrierReleasesAllRanks) {
  std::vector<std::future<Status>> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.push_back(std::async(std::launch::async, [this, r] {
      return Client()->Barrier("start", r, milliseconds(10000));
    }));
  }
  for (auto& f : ranks) EXPECT_TRUE(f.get().ok());
}

TEST_F(ServiceTest, BarrierTimesOutNamingMissingRanks) {
  Status s = Client()->Barrier("lonely", 0, milliseconds(200));
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.message().find("'1', '2'"), std::string::npos) << s.message();
}

TEST_F(ServiceTest, ShutdownCancelsPendingWaits) {
  auto waiter = Client();
  auto result = std::async(std::launch::async, [&] {
    return waiter->Wait({"never"}, milliseconds(60000));
  });
  std::this_thread::sleep_for(milliseconds(200));
  auto start = std::chrono::steady_clock::now();
  server_->Shutdown();
  auto r = result.get();
  EXPECT_FALSE(r.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(10000));
}

TEST_F(ServiceTest, UnreachableServerIsUnavailableAndSaysSo) {
  std::string address = server_->address();
  server_->Shutdown();
  auto c = RendezvousClient::Create(address, job_.job_id, job_.token);
  c->set_call_timeout(milliseconds(300));
  Status s = c->Set("k", "v");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("cannot reach the rendezvous server"),
            std::string::npos)
      << s.message();
}

// An elastic job over the wire: a member of the current membership blocks
// in Join until the launcher sets the next one, then gets its new rank; a
// join that waits past its timeout says so.
TEST_F(ServiceTest, ElasticMembersWaitForTheNextMembership) {
  auto job = server_->table().CreateJob({{"a", 1}, {"b", 1}}, 2,
                                        /*elastic=*/true);
  ASSERT_TRUE(job.ok());
  auto worker =
      RendezvousClient::Create(server_->address(), job->job_id, job->token);
  auto first = worker->Join("b", 0, milliseconds(5000));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->rank, 1);
  EXPECT_EQ(first->generation, 1);
  auto timed_out = worker->Join("b", 0, milliseconds(200), 1);
  EXPECT_EQ(timed_out.status().code(), StatusCode::kDeadlineExceeded);
  std::future<StatusOr<Assignment>> rejoin =
      std::async(std::launch::async,
                 [&] { return worker->Join("b", 0, milliseconds(10000), 1); });
  EXPECT_EQ(rejoin.wait_for(milliseconds(300)), std::future_status::timeout);
  ASSERT_TRUE(server_->table().SetMembership(job->job_id, {{"b", 1}}, 1).ok());
  ASSERT_EQ(rejoin.wait_for(milliseconds(5000)), std::future_status::ready);
  auto second = rejoin.get();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->rank, 0);
  EXPECT_EQ(second->size, 1);
  EXPECT_EQ(second->generation, 2);
}

}  // namespace
}  // namespace hvd::rendezvous
