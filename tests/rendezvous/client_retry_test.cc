// Clients riding out a server that goes away and comes back: the backoff,
// the retry timer, and calls across a restart of the server (over the
// same table, as a daemon that keeps its state does).
#include <gtest/gtest.h>

#include <future>
#include <set>
#include <thread>

#include "rendezvous/backoff.h"
#include "rendezvous/client.h"
#include "rendezvous/retry_timer.h"
#include "rendezvous/server.h"

namespace hvd::rendezvous {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(BackoffTest, DoublesUpToTheMostWithJitterInTheUpperHalf) {
  Backoff b(7, milliseconds(20), milliseconds(1000));
  const int64_t steps[] = {20, 40, 80, 160, 320, 640, 1000, 1000, 1000};
  for (int64_t step : steps) {
    const milliseconds w = b.Next();
    EXPECT_GE(w.count(), step / 2) << step;
    EXPECT_LE(w.count(), step) << step;
  }
}

TEST(BackoffTest, ClientsWithOtherSeedsDoNotWaitAlike) {
  // Ten clients that lost the same server: their third waits (in
  // [40, 80] ms) are not all the same.
  std::set<int64_t> third;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    Backoff b(seed);
    b.Next();
    b.Next();
    third.insert(b.Next().count());
  }
  EXPECT_GT(third.size(), 3u);
}

TEST(RetryTimerTest, RunsTasksInTheOrderTheyAreDue) {
  RetryTimer timer;
  std::promise<void> all;
  std::mutex mu;
  std::vector<int> order;
  auto task = [&](int n) {
    return [&, n](bool run) {
      std::lock_guard<std::mutex> lock(mu);
      EXPECT_TRUE(run);
      order.push_back(n);
      if (order.size() == 3) all.set_value();
    };
  };
  timer.After(milliseconds(60), task(3));
  timer.After(milliseconds(0), task(1));
  timer.After(milliseconds(30), task(2));
  all.get_future().wait();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(RetryTimerTest, StopAnswersEveryTaskNotYetDueAndLaterOnesAtOnce) {
  RetryTimer timer;
  std::atomic<int> ran{0}, dropped{0};
  for (int i = 0; i < 3; ++i) {
    timer.After(seconds(3600), [&](bool run) { ++(run ? ran : dropped); });
  }
  timer.Stop();
  EXPECT_EQ(dropped.load(), 3);
  timer.After(milliseconds(0), [&](bool run) { ++(run ? ran : dropped); });
  EXPECT_EQ(dropped.load(), 4);
  EXPECT_EQ(ran.load(), 0);
}

// A server over a table that outlives it: the test stops it and starts
// another on the same port, as a daemon with a state directory restarts.
class RestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    table_ = std::make_shared<JobTable>();
    Start("127.0.0.1:0");
    address_ = server_->address();
    auto job = table_->CreateJob({{"a", 2}}, 2);
    ASSERT_TRUE(job.ok());
    job_ = *job;
  }
  void Start(const std::string& listen) {
    ServerOptions options;
    options.listen = listen;
    options.admin_token = "admin-secret";
    options.table = table_;
    auto server = RendezvousServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }
  // As hvd-rendezvousd on SIGTERM: pending waits learn to come back.
  void Stop() {
    server_->Shutdown(Status::Unavailable("the server restarts"),
                      milliseconds(100));
    server_.reset();
  }
  std::unique_ptr<RendezvousClient> Client() {
    return RendezvousClient::Create(address_, job_.job_id, job_.token);
  }
  void WaitForBlocked(size_t n) {
    while (table_->BlockedCount() != n) {
      std::this_thread::sleep_for(milliseconds(5));
    }
  }

  std::shared_ptr<JobTable> table_;
  std::unique_ptr<RendezvousServer> server_;
  std::string address_;
  CreatedJob job_;
};

TEST_F(RestartTest,
       BlockedWaitsAndBarriersResumeAgainstTheServerThatComesBack) {
  auto worker0 = Client(), worker1 = Client();
  ASSERT_TRUE(worker0->Join("a", 0, seconds(10)).ok());
  auto wait = std::async(std::launch::async,
                         [&] { return worker0->Wait({"peer"}, seconds(60)); });
  auto barrier = std::async(std::launch::async, [&] {
    return worker0->Barrier("b", 0, seconds(60));
  });
  WaitForBlocked(2);
  Stop();
  // While the server is away, a call waits for it instead of failing.
  auto set = std::async(std::launch::async,
                        [&] { return worker1->Set("early", "1"); });
  EXPECT_EQ(set.wait_for(milliseconds(300)), std::future_status::timeout);
  Start(address_);
  ASSERT_TRUE(set.get().ok());
  ASSERT_TRUE(worker1->Join("a", 1, seconds(10)).ok());
  ASSERT_TRUE(worker1->Set("peer", "here").ok());
  auto got = wait.get();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (std::vector<std::string>{"here"}));
  ASSERT_TRUE(worker1->Barrier("b", 1, seconds(10)).ok());
  Status b = barrier.get();
  EXPECT_TRUE(b.ok()) << b.ToString();
  auto early = worker0->Get("early");
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(*early, "1");
}

TEST_F(RestartTest, AJoinStartedWhileTheServerIsAwayGetsItsRank) {
  Stop();
  auto joined = std::async(std::launch::async,
                           [&] { return Client()->Join("a", 1, seconds(60)); });
  EXPECT_EQ(joined.wait_for(milliseconds(300)), std::future_status::timeout);
  Start(address_);
  auto a = joined.get();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->rank, 1);
}

TEST_F(RestartTest, AServerThatNeverComesBackIsOneErrorAfterTheDeadline) {
  Stop();
  auto c = Client();
  c->set_call_timeout(milliseconds(800));
  const auto start = std::chrono::steady_clock::now();
  Status s = c->Set("k", "v");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("cannot reach the rendezvous server"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("still unreachable after"), std::string::npos)
      << s.message();
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(400));
  auto w = c->Wait({"k"}, milliseconds(600));
  EXPECT_EQ(w.status().code(), StatusCode::kUnavailable);
  auto j = c->Join("a", 0, milliseconds(600));
  EXPECT_EQ(j.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(j.status().message().find("--start-timeout"), std::string::npos)
      << j.status().message();
}

TEST_F(RestartTest, ALauncherEndingItsServerEndsTheWaitsForGood) {
  auto c = Client();
  auto wait = std::async(std::launch::async,
                         [&] { return c->Wait({"x"}, seconds(60)); });
  WaitForBlocked(1);
  server_->Shutdown(Status::Cancelled("the job finished"), milliseconds(100));
  auto r = wait.get();
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled) << r.status().ToString();
  EXPECT_NE(r.status().message().find("the job finished"), std::string::npos);
}

}  // namespace
}  // namespace hvd::rendezvous
