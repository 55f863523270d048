// The control plane over real TCP: messages of any size (past the socket
// buffers), strangers without the ticket, dead and silent peers.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "runtime/transport/local/local.h"
#include "runtime/transport/shm/shm_awake.h"
#include "runtime/transport/shm/shm_backend.h"
#include "runtime/transport/tcp/tcp_control.h"
#include "tests/runtime/memory_store.h"
#include "tests/runtime/tcp_planes.h"

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;

ControlOptions Options(int rank, int size,
                       ControlExchange exchange = ControlExchange::kMesh) {
  ControlOptions o;
  o.rank = rank;
  o.size = size;
  o.exchange = exchange;
  o.connect_timeout = milliseconds(10000);
  o.op_timeout = milliseconds(2000);
  return o;
}

constexpr ControlExchange kExchanges[] = {ControlExchange::kMesh,
                                          ControlExchange::kDoubling};

// Builds the planes of `size` ranks in threads.
std::vector<std::unique_ptr<ControlPlane>> Mesh(
    int size, MemoryStore& store,
    ControlExchange exchange = ControlExchange::kMesh) {
  return TcpPlanes(size, store,
                   [&](int r) { return Options(r, size, exchange); });
}

TEST(ControlPlaneTest, EveryRankGetsEveryMessageOfAnySize) {
  for (ControlExchange exchange : kExchanges)
    for (int size : {2, 3, 4, 5}) {
      SCOPED_TRACE(ControlExchangeName(exchange));
      MemoryStore store;
      auto planes = Mesh(size, store, exchange);
      ASSERT_EQ(planes.size(), static_cast<size_t>(size));
      std::vector<std::thread> threads;
      for (int r = 0; r < size; ++r) {
        threads.emplace_back([&, r] {
          // Sizes: empty, tiny, and far past the socket buffers (8 MiB).
          for (size_t bytes : {size_t{0}, size_t{5}, size_t{8} << 20}) {
            for (int round = 0; round < 3; ++round) {
              std::string mine(bytes + r, static_cast<char>('a' + r + round));
              std::vector<std::string> all;
              Status s = planes[r]->Exchange(mine, &all);
              ASSERT_TRUE(s.ok()) << s.ToString();
              ASSERT_EQ(all.size(), static_cast<size_t>(size));
              for (int q = 0; q < size; ++q) {
                ASSERT_EQ(
                    all[q],
                    std::string(bytes + q, static_cast<char>('a' + q + round)))
                    << "rank " << r << " from " << q << " bytes " << bytes;
              }
            }
          }
        });
      }
      for (auto& t : threads) t.join();
    }
}

TEST(ControlPlaneTest, AStrangerWithoutTheTicketCannotPoseAsARank) {
  MemoryStore store;
  std::unique_ptr<ControlPlane> zero;
  std::thread t([&] {
    auto p = CreateTcpControlPlane(Options(0, 2), store);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    zero = std::move(*p);
  });
  // The stranger reads rank 0's address but guesses the ticket.
  auto addr = store.Wait({"ctl/0"}, milliseconds(5000));
  ASSERT_TRUE(addr.ok());
  std::string hostport = (*addr)[0].substr(0, (*addr)[0].find(' '));
  int port = std::stoi(hostport.substr(hostport.rfind(':') + 1));
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  std::string hello(4 + 32, '0');
  int32_t one = 1;
  std::memcpy(hello.data(), &one, 4);
  ASSERT_EQ(write(fd, hello.data(), hello.size()),
            static_cast<ssize_t>(hello.size()));
  // The real rank 1 still gets in, and the two exchange.
  auto p1 = CreateTcpControlPlane(Options(1, 2), store);
  ASSERT_TRUE(p1.ok()) << p1.status().ToString();
  t.join();
  ASSERT_TRUE(zero);
  std::thread t0([&] {
    std::vector<std::string> all;
    ASSERT_TRUE(zero->Exchange("zero", &all).ok());
    EXPECT_EQ(all[1], "one");
  });
  std::vector<std::string> all;
  ASSERT_TRUE((*p1)->Exchange("one", &all).ok());
  EXPECT_EQ(all[0], "zero");
  t0.join();
  // The stranger got nothing: rank 0 closed it.
  char c;
  EXPECT_LE(read(fd, &c, 1), 0);
  close(fd);
}

TEST(ControlPlaneTest, DeadPeerAndSilentPeerAreErrorsNamingThem) {
  for (ControlExchange exchange : kExchanges) {
    SCOPED_TRACE(ControlExchangeName(exchange));
    MemoryStore store;
    auto planes = Mesh(3, store, exchange);
    // Rank 2 goes away; rank 1 says nothing.
    planes[2].reset();
    std::vector<std::string> all;
    auto start = std::chrono::steady_clock::now();
    Status s = planes[0]->Exchange("x", &all);
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
    EXPECT_NE(s.message().find("rank 2 closed its connection"),
              std::string::npos)
        << s.message();
    // The failure sticks.
    EXPECT_EQ(planes[0]->Exchange("x", &all).code(), StatusCode::kUnavailable);
    s = planes[1]->Exchange("y", &all);  // rank 0 sent, rank 2 is gone
    EXPECT_FALSE(s.ok());
    // Told why, by rank 0 if not by rank 2's own socket.
    EXPECT_NE(s.message().find("rank 2 closed its connection"),
              std::string::npos)
        << s.message();
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              std::chrono::seconds(5));
  }
}

TEST(ControlPlaneTest, SilentPeerTimesOut) {
  for (ControlExchange exchange : kExchanges) {
    SCOPED_TRACE(ControlExchangeName(exchange));
    MemoryStore store;
    auto planes = Mesh(2, store, exchange);
    std::vector<std::string> all;
    auto start = std::chrono::steady_clock::now();
    Status s = planes[0]->Exchange("x", &all);  // rank 1 never calls
    EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
    EXPECT_NE(s.message().find("no message from rank 1"), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find("HOROVOD_GLOO_TIMEOUT_SECONDS"),
              std::string::npos);
    EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(1900));
  }
}

TEST(ControlPlaneTest, LocalPlaneEchoes) {
  auto p = CreateLocalControlPlane();
  std::vector<std::string> all;
  ASSERT_TRUE(p->Exchange("me", &all).ok());
  EXPECT_EQ(all, std::vector<std::string>{"me"});
}

// A plane that cannot split its exchange times it as a whole, and runs
// `waiting` once, before it.
TEST(ControlPlaneTest, APlaneThatCannotSplitTimesTheWholeExchange) {
  auto p = CreateLocalControlPlane();
  int calls = 0;
  ControlPlane::Timed t;
  t.arg = &calls;
  t.waiting = [](void* arg) { ++*static_cast<int*>(arg); };
  std::vector<std::string> all;
  ASSERT_TRUE(p->TimedExchange("me", &all, &t).ok());
  EXPECT_EQ(all, std::vector<std::string>{"me"});
  EXPECT_EQ(calls, 1);
  EXPECT_LE(t.sent, t.came);
}

}  // namespace
}  // namespace hvd::runtime

namespace hvd::runtime {
namespace {

// The shared-memory plane's ranks, as threads of this process.
std::vector<std::unique_ptr<ControlPlane>> ShmPlanes(int size,
                                                     MemoryStore& store) {
  std::vector<std::unique_ptr<ControlPlane>> planes(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      ShmOptions o;
      o.rank = r;
      o.size = size;
      o.group = "control-test";
      o.job_id = "control-test";
      o.op_timeout = milliseconds(20000);
      o.slot_bytes = 64 << 10;  // the longest message takes ten rounds
      auto p = CreateShmControlPlane(o, store);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      planes[r] = std::move(*p);
    });
  }
  for (auto& t : threads) t.join();
  return planes;
}

// Messages that ride in a rank's box (up to 8176 bytes), just past it, and
// past a whole slot (in rounds), mixed in one exchange (each rank's size
// differs by round), arrive whole at every rank.
TEST(ShmControlPlaneTest, MessagesInTheBoxAndPastItArriveWhole) {
  for (int size : {2, 3}) {
    MemoryStore store;
    auto planes = ShmPlanes(size, store);
    ASSERT_EQ(planes.size(), static_cast<size_t>(size));
    const std::vector<size_t> sizes = {0, 5, 8176, 8177, 600 << 10};
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r) {
      threads.emplace_back([&, r] {
        for (int round = 0; round < 12; ++round) {
          auto message = [&](int q) {
            const size_t bytes = sizes[(round + q) % sizes.size()];
            std::string m(bytes, static_cast<char>('a' + q + round));
            if (!m.empty()) m.back() = static_cast<char>(q);
            return m;
          };
          std::vector<std::string> all;
          Status s = planes[r]->Exchange(message(r), &all, true);
          ASSERT_TRUE(s.ok()) << s.ToString();
          ASSERT_EQ(all.size(), static_cast<size_t>(size));
          for (int q = 0; q < size; ++q) {
            ASSERT_EQ(all[q], message(q))
                << "rank " << r << " from " << q << " round " << round;
          }
        }
      });
    }
    for (auto& t : threads) t.join();
  }
}

// A timed exchange whose peer comes late: `waiting` runs once, after the
// message went out and before the peer's came (the peer starts only once
// it ran: a signal, not a sleep), and the exchange's times bracket the
// peer's start.
TEST(ShmControlPlaneTest, ATimedExchangeRunsWaitingOnceWhenThePeerIsLate) {
  MemoryStore store;
  auto planes = ShmPlanes(2, store);
  ASSERT_EQ(planes.size(), 2u);
  struct Waited {
    int calls = 0;
    std::promise<std::chrono::steady_clock::time_point> at;
  } waited;
  auto ran = waited.at.get_future();
  std::chrono::steady_clock::time_point peer_started;
  std::thread late([&] {
    ASSERT_EQ(ran.wait_for(std::chrono::seconds(30)), std::future_status::ready)
        << "rank 0 never said it waits";
    peer_started = std::chrono::steady_clock::now();
    std::vector<std::string> all;
    ASSERT_TRUE(planes[1]->Exchange("one", &all, true).ok());
    EXPECT_EQ(all, (std::vector<std::string>{"zero", "one"}));
  });
  ControlPlane::Timed t;
  t.arg = &waited;
  t.waiting = [](void* arg) {
    auto& w = *static_cast<Waited*>(arg);
    if (++w.calls == 1) w.at.set_value(std::chrono::steady_clock::now());
  };
  std::vector<std::string> all;
  Status s = planes[0]->TimedExchange("zero", &all, &t);
  late.join();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(all, (std::vector<std::string>{"zero", "one"}));
  EXPECT_EQ(waited.calls, 1);
  EXPECT_LE(t.sent, ran.get());
  EXPECT_LE(peer_started, t.came);
}

// An engine thread that sleeps while its callers drive (WaitForCaller) is
// woken by a peer whose exchange nobody joined: the peer rings once its
// spin is over, and the exchange then completes.
TEST(ShmControlPlaneTest, APeerNobodyJoinsRingsTheSleepingEngine) {
  MemoryStore store;
  auto planes = ShmPlanes(2, store);
  ASSERT_EQ(planes.size(), 2u);
  std::thread peer([&] {
    std::vector<std::string> all;
    Status s = planes[1]->Exchange("from 1", &all, true);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(all[0], "from 0");
  });
  const auto start = std::chrono::steady_clock::now();
  bool woken_by_peer = false;
  planes[0]->WaitForCaller(milliseconds(60000), &woken_by_peer);
  EXPECT_TRUE(woken_by_peer);
  // Woken by the ring, not by the end of the minute.
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(30000));
  std::vector<std::string> all;
  ASSERT_TRUE(planes[0]->Exchange("from 0", &all, true).ok());
  EXPECT_EQ(all[1], "from 1");
  peer.join();
}

// A peer that gives up waiting while this rank's caller drives does not
// wake the engine thread (the caller may join), but the caller, once it
// stops driving, learns of the ring and can hand the exchange over.
TEST(ShmControlPlaneTest, ARingWhileDrivingIsSeenWhenTheCallerLeaves) {
  MemoryStore store;
  auto planes = ShmPlanes(2, store);
  ASSERT_EQ(planes.size(), 2u);
  planes[0]->SetDriving(true);
  EXPECT_FALSE(planes[0]->PeerRangWhileDriving());
  std::thread peer([&] {
    std::vector<std::string> all;
    ASSERT_TRUE(planes[1]->Exchange("from 1", &all, true).ok());
  });
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!planes[0]->PeerRangWhileDriving() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  planes[0]->SetDriving(false);
  EXPECT_TRUE(planes[0]->PeerRangWhileDriving());
  std::vector<std::string> all;
  ASSERT_TRUE(planes[0]->Exchange("from 0", &all, true).ok());
  peer.join();
}

// Whether thread `tid` of this process is asleep (in the futex, for a
// thread that does nothing else).
bool ThreadSleeps(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)),
                   std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() &&
         stat[paren + 2] == 'S';
}

// A submission made while a caller drives rings without waking the
// sleeping engine thread; the caller, handing work over as it leaves,
// must still wake it (it once found the submission's notice unseen and
// rang no more, and the engine thread slept out its timeout).
TEST(ShmControlPlaneTest, TheHandOffAfterDrivingWakesTheEngineThread) {
  MemoryStore store;
  auto planes = ShmPlanes(2, store);
  ASSERT_EQ(planes.size(), 2u);
  std::atomic<pid_t> tid{0};
  std::promise<void> woke;
  auto woken = woke.get_future();
  std::thread engine([&] {
    tid = static_cast<pid_t>(syscall(SYS_gettid));
    bool peer = false;
    planes[0]->WaitForCaller(milliseconds(60000), &peer);
    woke.set_value();
  });
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((tid == 0 || !ThreadSleeps(tid)) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  ASSERT_TRUE(ThreadSleeps(tid)) << "the engine thread never slept";
  planes[0]->SetDriving(true);
  planes[0]->Notify();  // a submitter, while the caller drives
  planes[0]->SetDriving(false);
  EXPECT_TRUE(planes[0]->PeerRangWhileDriving());
  planes[0]->Notify();  // the caller's hand-off
  // Woken by the hand-off, not by the end of the minute.
  EXPECT_EQ(woken.wait_for(std::chrono::seconds(30)),
            std::future_status::ready);
  engine.join();
}

// The shm exchange's closing fence is skipped only while every peer is
// certainly still spinning: consecutive timed exchanges, each stored within
// half the spin time of the one two before.
TEST(ShmPeersAwakeTest, OnlyCloseConsecutiveTimedExchangesSkipTheFence) {
  const ShmPeersAwake::Clock::time_point t0 = ShmPeersAwake::Clock::now();
  struct Step {
    uint32_t count;
    int sent_us, came_us;  // after t0
    bool awake;
  };
  const std::vector<std::vector<Step>> runs = {
      {
          // The first of each parity has nothing to go by.
          {1, 0, 1, false},
          {2, 2, 3, false},
          // Each stored 2 us after the peers of the one two before came.
          {3, 3, 4, true},
          {4, 5, 6, true},
          // Stored 30 us after: a peer may have spun that long.
          {5, 34, 35, false},
          {6, 36, 37, false},
          {7, 38, 39, true},
          {8, 40, 41, true},
          // An untimed exchange (9) leaves a gap: 11 cannot go by it.
          {10, 42, 43, true},
          {11, 44, 45, false},
          {12, 46, 47, true},
          {13, 48, 49, true},
      },
      // The count wraps.
      {{UINT32_MAX - 1, 0, 1, false},
       {UINT32_MAX, 2, 3, false},
       {0, 3, 4, true},
       {1, 5, 6, true}},
  };
  for (const auto& run : runs) {
    ShmPeersAwake awake;
    for (const Step& s : run) {
      EXPECT_EQ(
          awake.Exchanged(s.count, t0 + std::chrono::microseconds(s.sent_us),
                          t0 + std::chrono::microseconds(s.came_us)),
          s.awake)
          << "exchange " << s.count;
    }
  }
}

}  // namespace
}  // namespace hvd::runtime
