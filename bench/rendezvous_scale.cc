// rendezvous_scale: N simulated workers against one rendezvous.
//
// Every worker joins one job (hosts of --slots slots each), sets its own
// key, waits for its neighbour's, and enters a barrier; then a KV phase
// runs --kv-ops sets and gets with --window calls in flight. Everything is
// asynchronous, over --channels clients (each one connection) of the
// client library: one Session stream per client, as libhvd uses.
//
//   rendezvous_scale --workers 10000 [--addr HOST:PORT --admin-token-file F]
//   rendezvous_scale --first-answer 1 --addr HOST:PORT --admin-token-file F
//
// --first-answer: calls the server (CreateJob) every millisecond until it
// answers, and prints "FIRST_ANSWER <wall-clock ns>": how soon a restarted
// daemon answers (bench/run_rendezvous_scale.sh).
// Without --addr it serves the rendezvous itself, in this process.
// Prints:
//   BENCH rendezvous.join.N <s> s        first join sent -> last assignment
//   BENCH rendezvous.kv.ops <ops/s> ops/s
//   BENCH rendezvous.rpc.p99 <ms> ms      per-call latency in the KV phase
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/files.h"
#include "common/parse.h"
#include "common/random.h"
#include "proto/rendezvous.grpc.pb.h"
#include "rendezvous/client.h"
#include "rendezvous/server.h"

namespace pb = hvd::rendezvous::v1;
using Clock = std::chrono::steady_clock;
using hvd::Status;
using hvd::StatusOr;

namespace {

struct Options {
  int workers = 10000;
  int slots = 8;
  int channels = 4;
  int kv_ops = 200000;
  int window = 256;
  std::string addr;
  std::string admin_token_file;
  bool first_answer = false;
};

int Usage(const std::string& why) {
  std::fprintf(stderr, "rendezvous_scale: %s\n", why.c_str());
  return 2;
}

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The operations a simulated worker makes, asynchronously.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual void Join(int client, const std::string& host, int slot,
                    std::function<void(StatusOr<int>)> done) = 0;
  virtual void Set(int client, const std::string& key, const std::string& value,
                   std::function<void(Status)> done) = 0;
  virtual void Get(int client, const std::string& key,
                   std::function<void(Status)> done) = 0;
  virtual void Wait(int client, const std::string& key,
                    std::function<void(Status)> done) = 0;
  virtual void Barrier(int client, int rank,
                       std::function<void(Status)> done) = 0;
};

constexpr auto kTimeout = std::chrono::seconds(100);

class SessionTransport final : public Transport {
 public:
  SessionTransport(const Options& o, const std::string& address,
                   const std::string& job, const std::string& token) {
    for (int c = 0; c < o.channels; ++c) {
      clients_.push_back(
          hvd::rendezvous::RendezvousClient::Create(address + "", job, token));
    }
  }
  hvd::rendezvous::RendezvousClient& C(int i) {
    return *clients_[i % clients_.size()];
  }
  void Join(int c, const std::string& host, int slot,
            std::function<void(StatusOr<int>)> done) override {
    C(c).JoinAsync(host, slot, 0,
                   [done](StatusOr<hvd::rendezvous::Assignment> a) {
                     if (!a.ok()) return done(a.status());
                     done(a->rank);
                   });
  }
  void Set(int c, const std::string& key, const std::string& value,
           std::function<void(Status)> done) override {
    C(c).SetAsync(key, value, std::move(done));
  }
  void Get(int c, const std::string& key,
           std::function<void(Status)> done) override {
    C(c).GetAsync(key, [done](StatusOr<std::string> v) { done(v.status()); });
  }
  void Wait(int c, const std::string& key,
            std::function<void(Status)> done) override {
    C(c).WaitAsync(
        {key}, kTimeout,
        [done](StatusOr<std::vector<std::string>> v) { done(v.status()); });
  }
  void Barrier(int c, int rank, std::function<void(Status)> done) override {
    C(c).BarrierAsync("started", rank, kTimeout, std::move(done));
  }

 private:
  std::vector<std::unique_ptr<hvd::rendezvous::RendezvousClient>> clients_;
};

class Latch {
 public:
  void Arrive() {
    std::lock_guard<std::mutex> lock(mu_);
    ++count_;
    if (count_ >= target_) cv_.notify_all();
  }
  void Wait(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    target_ = n;
    cv_.wait(lock, [&] { return count_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
  int target_ = 0;
};

class Bench {
 public:
  Bench(const Options& o, Transport& t) : o_(o), t_(t) {}

  bool RunWorkers() {
    auto start = Clock::now();
    for (int i = 0; i < o_.workers; ++i) {
      std::string host = "node" + std::to_string(i / o_.slots);
      t_.Join(i, host, i % o_.slots, [this, i](StatusOr<int> rank) {
        if (!Check(rank.status(), "join")) return done_.Arrive();
        {
          std::lock_guard<std::mutex> lock(mu_);
          last_join_ = Clock::now();
        }
        joined_.Arrive();
        AfterJoin(i, *rank);
      });
    }
    joined_.Wait(o_.workers);
    join_s_ = Seconds(last_join_ - start);
    done_.Wait(o_.workers);
    all_s_ = Seconds(Clock::now() - start);
    return failures_ == 0;
  }

  void AfterJoin(int i, int rank) {
    std::string value = "10.0.0." + std::to_string(rank % 250) + ":1234";
    t_.Set(i, "addr/" + std::to_string(rank), value, [this, i, rank](Status s) {
      if (!Check(s, "set")) return done_.Arrive();
      std::string next = "addr/" + std::to_string((rank + 1) % o_.workers);
      t_.Wait(i, next, [this, i, rank](Status s) {
        if (!Check(s, "get")) return done_.Arrive();
        t_.Barrier(i, rank, [this](Status s) {
          Check(s, "barrier");
          done_.Arrive();
        });
      });
    });
  }

  // The KV phase: a window of calls in flight, each completion starting the
  // next, half sets and half gets.
  void StartOp(int n) {
    if (n >= o_.kv_ops) return;
    auto start = Clock::now();
    auto done = [this, start](Status s) {
      auto took = Clock::now() - start;
      Check(s, "kv");
      {
        std::lock_guard<std::mutex> lock(mu_);
        latencies_.push_back(
            std::chrono::duration<double, std::milli>(took).count());
      }
      kv_done_.Arrive();
      StartOp(next_op_.fetch_add(1));
    };
    if (n % 2 == 0) {
      t_.Set(n, "kv/" + std::to_string(n % 4096), std::string(64, 'v'), done);
    } else {
      t_.Get(n, "addr/" + std::to_string(n % o_.workers), done);
    }
  }

  void RunKv() {
    next_op_ = o_.window;
    auto start = Clock::now();
    for (int i = 0; i < std::min(o_.window, o_.kv_ops); ++i) StartOp(i);
    kv_done_.Wait(o_.kv_ops);
    kv_s_ = Seconds(Clock::now() - start);
  }

  bool Check(const Status& s, const char* what) {
    if (s.ok()) return true;
    if (failures_.fetch_add(1) < 5) {
      std::fprintf(stderr, "rendezvous_scale: %s failed: %s\n", what,
                   s.ToString().c_str());
    }
    return false;
  }

  void Report() {
    std::sort(latencies_.begin(), latencies_.end());
    double p99 = latencies_.empty()
                     ? 0
                     : latencies_[std::min(latencies_.size() - 1,
                                           latencies_.size() * 99 / 100)];
    std::printf(
        "%s transport, %d workers on %d hosts, %d channels: joined in "
        "%.3f s, set+get+barrier done in %.3f s; %d KV ops with %d in "
        "flight in %.3f s\n",
        "session", o_.workers, (o_.workers + o_.slots - 1) / o_.slots,
        o_.channels, join_s_, all_s_, o_.kv_ops, o_.window, kv_s_);
    std::printf("BENCH rendezvous.join.%d %.3f s\n", o_.workers, join_s_);
    std::printf("BENCH rendezvous.kv.ops %.0f ops/s\n", o_.kv_ops / kv_s_);
    std::printf("BENCH rendezvous.rpc.p99 %.3f ms\n", p99);
  }

  int failures() const { return failures_; }

 private:
  const Options& o_;
  Transport& t_;
  Latch joined_, done_, kv_done_;
  std::mutex mu_;
  Clock::time_point last_join_;
  std::vector<double> latencies_;
  std::atomic<int> next_op_{0};
  std::atomic<int> failures_{0};
  double join_s_ = 0, all_s_ = 0, kv_s_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return Usage(a + " needs a value");
    std::string v = argv[++i];
    auto num = [&](int& out, int min, int max) {
      auto n = hvd::ParseInt64(v, a, min, max);
      if (!n.ok()) return false;
      out = static_cast<int>(*n);
      return true;
    };
    bool ok = true;
    if (a == "--workers")
      ok = num(o.workers, 1, 1000000);
    else if (a == "--slots")
      ok = num(o.slots, 1, 1024);
    else if (a == "--channels")
      ok = num(o.channels, 1, 256);
    else if (a == "--kv-ops")
      ok = num(o.kv_ops, 1, 100000000);
    else if (a == "--window")
      ok = num(o.window, 1, 100000);
    else if (a == "--addr")
      o.addr = v;
    else if (a == "--admin-token-file")
      o.admin_token_file = v;
    else if (a == "--first-answer")
      o.first_answer = v == "1";
    else
      return Usage("unknown option " + a);
    if (!ok) return Usage("bad value for " + a + ": " + v);
  }

  std::unique_ptr<hvd::rendezvous::RendezvousServer> server;
  std::string address = o.addr, admin;
  if (address.empty()) {
    hvd::rendezvous::ServerOptions so;
    so.admin_token = *hvd::RandomHex(16);
    so.limits.max_keys_per_job = 100000000;
    auto s = hvd::rendezvous::RendezvousServer::Start(so);
    if (!s.ok()) return Usage(s.status().ToString());
    server = std::move(*s);
    address = server->address();
    admin = so.admin_token;
  } else {
    auto t = hvd::ReadSecretFile(o.admin_token_file, "--admin-token-file");
    if (!t.ok()) return Usage(t.status().ToString());
    admin = *t;
  }

  if (o.first_answer) {
    const auto give_up = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < give_up) {
      auto probe = hvd::rendezvous::RendezvousClient::CreateJob(
          address, admin, {{"probe", 1, 0}}, 1, std::chrono::milliseconds(200));
      if (probe.ok()) {
        std::printf("FIRST_ANSWER %lld\n",
                    static_cast<long long>(
                        std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count()));
        return 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return Usage("the server did not answer within 60 s");
  }

  std::vector<hvd::rendezvous::HostSlots> hosts;
  for (int h = 0; h * o.slots < o.workers; ++h) {
    hosts.push_back({"node" + std::to_string(h),
                     std::min(o.slots, o.workers - h * o.slots), 0});
  }
  auto job = hvd::rendezvous::RendezvousClient::CreateJob(
      address, admin, hosts, o.workers, std::chrono::seconds(30));
  if (!job.ok()) return Usage(job.status().ToString());

  std::unique_ptr<Transport> transport =
      std::make_unique<SessionTransport>(o, address, job->job_id, job->token);
  Bench bench(o, *transport);
  if (!bench.RunWorkers()) return 1;
  bench.RunKv();
  bench.Report();
  int failures = bench.failures();
  transport.reset();
  return failures == 0 ? 0 : 1;
}
