#include "runtime/transport/hierarchical/host_control.h"

#include <sched.h>
#include <sys/socket.h>

#include <atomic>
#include <cstring>

#include "runtime/transport/hierarchical/host_messages.h"
#include "runtime/transport/shm/shm_backend.h"
#include "runtime/transport/tcp/tcp_mesh.h"

namespace hvd::runtime {
namespace {

// How long a leader's caller looks for a peer's exchange (its host's or
// another leader's) before the engine thread's sleep takes over: as the
// TCP plane's least spin.
constexpr std::chrono::microseconds kAwaitPeer{500};

// Who is where: each host's ranks (by host index, in local-rank order).
using HostRanks = std::vector<std::vector<int>>;

class HostControlPlane final : public ControlPlane {
 public:
  explicit HostControlPlane(const HostControlOptions& o) : options_(o) {}

  // The pieces, set by the factory below in turn (the local plane's ring
  // calls into this object, the leaders' plane polls the bells, and the
  // hosts' ranks are learnt through both planes). `local_`: the host's
  // shared-memory plane (null on a host of one rank); `cross_`: the
  // leaders' plane (leaders only); `bells_`: a leader's sockets from the
  // other ranks of its host, or a rank's one to its leader.
  std::unique_ptr<ControlPlane> local_, cross_;
  std::vector<Fd> bells_;
  HostRanks host_ranks_;

  bool leader() const { return options_.local.rank == 0; }

  // A rank of the host is about to ring its leader's bell in shared
  // memory (the leader did not come within the spin): the leader sleeps on
  // its sockets, so a byte goes down the bell socket too. Not while this
  // rank knows the leader is in this exchange already: it then waits for
  // the leaders' exchange, not for the leader to come, and a ring would
  // only wake the leader's engine thread for nothing.
  bool RingLocal(int q) {
    if (joined_.load(std::memory_order_relaxed)) return false;
    if (q == 0 && !leader() && !bells_.empty()) {
      const char one = 1;
      (void)!::send(bells_[0].get(), &one, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    return true;
  }

  Status Exchange(const std::string& mine, std::vector<std::string>* all,
                  bool urgent) override {
    if (!broken_.ok()) return broken_;
    traffic_.exchanges++;
    Status s = leader() ? Lead(mine, urgent) : Follow(mine, urgent);
    joined_.store(false, std::memory_order_relaxed);
    if (s.ok()) {
      s = UnpackHandOut(hand_out_, host_ranks_, all, &groups_, &merged_);
    }
    if (!s.ok()) broken_ = s;
    return s;
  }

  void Wait(std::chrono::milliseconds timeout, bool* peer) override {
    Sleep(timeout, /*started_wakes=*/true, peer);
  }
  // A leader's engine thread wakes for any exchange started while its
  // callers drive, as in Wait: waking only for rings, it slept through
  // the leaders' exchanges its callers did not come to (a peer rings once
  // an exchange), and at 16 namespace hosts of 2 ranks a third of the
  // cycles waited 10-100 ms (the engine's tick) for it; so 1 in 25.
  void WaitForCaller(std::chrono::milliseconds timeout, bool* peer) override {
    Sleep(timeout, /*started_wakes=*/leader(), peer);
  }

  void Notify() override {
    if (leader()) {
      cross_->Notify();
    } else {
      local_->Notify();
    }
  }

  // Callers may drive: a rank of the host sees its leader start in shared
  // memory; a leader sees its host's ranks there and the other leaders on
  // its sockets.
  bool Drivable() const override { return true; }
  bool PeerWaiting() override {
    return (local_ && local_->PeerWaiting()) ||
           (leader() && cross_->PeerWaiting());
  }
  bool AwaitPeer() override {
    if (!leader()) return local_->AwaitPeer();
    if (!local_) return cross_->AwaitPeer();
    const auto until = std::chrono::steady_clock::now() + kAwaitPeer;
    do {
      if (PeerWaiting()) return true;
      sched_yield();
    } while (std::chrono::steady_clock::now() < until);
    return false;
  }
  void SetDriving(bool on) override {
    if (local_) local_->SetDriving(on);
    if (cross_) cross_->SetDriving(on);
  }
  bool PeerRangWhileDriving() override {
    return (local_ && local_->PeerRangWhileDriving()) ||
           (leader() && cross_->PeerRangWhileDriving());
  }

  void SetMerger(Merger* m) override {
    merger_ = m;
    host_merger_ = std::make_unique<HostMerger>(m);
    if (cross_) cross_->SetMerger(m ? host_merger_.get() : nullptr);
  }
  const std::vector<int>* MergedGroups() const override {
    return merged_ ? &groups_ : nullptr;
  }

  Traffic traffic() const override {
    Traffic t = cross_ ? cross_->traffic() : Traffic{};
    t.exchanges = traffic_.exchanges;
    t.sockets += static_cast<int>(bells_.size());
    return t;
  }

 private:
  // The engine thread's sleep: a rank of the host sleeps on its bell in
  // shared memory; a leader on its sockets (the leaders' plane polls the
  // host's bell sockets too), having looked for a rank of its host that
  // started first.
  void Sleep(std::chrono::milliseconds timeout, bool started_wakes,
             bool* peer) {
    if (!leader()) {
      return started_wakes ? local_->Wait(timeout, peer)
                           : local_->WaitForCaller(timeout, peer);
    }
    if (started_wakes && local_ && local_->PeerWaiting()) {
      *peer = true;
      return;
    }
    if (started_wakes) {
      cross_->Wait(timeout, peer);
    } else {
      cross_->WaitForCaller(timeout, peer);
    }
    if (local_ && local_->PeerWaiting()) *peer = true;
  }

  // Steps 1-3 on the leader: the host's messages, the leaders' exchange of
  // host messages, and the hand-out of its outcome.
  Status Lead(const std::string& mine, bool urgent) {
    Status local = Status::Ok();
    if (local_) {
      local = local_->Exchange(mine, &local_all_, urgent);
    } else {
      local_all_.assign(1, mine);
    }
    if (!local.ok()) {
      // The other leaders learn it in this exchange rather than wait for
      // this host until they time out.
      (void)cross_->Exchange(HostErrorMessage(local.message()), &hosts_,
                             urgent);
      return local;
    }
    PackHostMessage(local_all_, merger_, &host_msg_);
    Status s = cross_->Exchange(host_msg_, &hosts_, urgent);
    if (s.ok()) {
      PackHandOut(hosts_, cross_->MergedGroups(), &hand_out_);
    } else {
      hand_out_ = HandOutError(s.message());
    }
    if (local_) {
      // The host's ranks get the failure too: their own wait would only
      // time out, naming this leader.
      HVD_RETURN_IF_ERROR(local_->Exchange(hand_out_, &local_all_, urgent));
    }
    return s;
  }

  // Steps 1 and 3 on the host's other ranks. (Where the waits spin, they
  // yield the CPU: ShmOptions::share_cpus.)
  Status Follow(const std::string& mine, bool urgent) {
    HVD_RETURN_IF_ERROR(local_->Exchange(mine, &local_all_, urgent));
    joined_.store(true, std::memory_order_relaxed);
    HVD_RETURN_IF_ERROR(local_->Exchange(std::string(), &local_all_, urgent));
    hand_out_.swap(local_all_[0]);
    return Status::Ok();
  }

  const HostControlOptions options_;
  // Set between this rank's steps 1 and 3: the leader is in the exchange
  // (read by the local plane's ring, on the exchanging thread).
  std::atomic<bool> joined_{false};
  Merger* merger_ = nullptr;
  std::unique_ptr<HostMerger> host_merger_;
  std::vector<std::string> local_all_, hosts_;
  std::string host_msg_, hand_out_;
  std::vector<int> groups_;
  bool merged_ = false;
  Traffic traffic_;
  Status broken_;
};

std::string RankList(const std::vector<int>& ranks) {
  std::string out(4 * ranks.size(), '\0');
  std::memcpy(out.data(), ranks.data(), out.size());
  return out;
}

std::vector<int> ParseRankList(const std::string& s) {
  std::vector<int> ranks(s.size() / 4);
  std::memcpy(ranks.data(), s.data(), 4 * ranks.size());
  return ranks;
}

// Setup step 1: the host's ranks learn each other's ranks (by local rank).
StatusOr<std::vector<int>> MeetLocally(ControlPlane* local, int rank) {
  if (local == nullptr) return std::vector<int>{rank};
  std::vector<std::string> all;
  HVD_RETURN_IF_ERROR(local->Exchange(RankList({rank}), &all, true));
  std::vector<int> ranks;
  for (const std::string& s : all) {
    const std::vector<int> one = ParseRankList(s);
    if (one.size() != 1) {
      return Status::DataLoss("control plane", "malformed local rank list");
    }
    ranks.push_back(one[0]);
  }
  return ranks;
}

// Setup step 2 (leaders, then handed out): every host's ranks.
StatusOr<HostRanks> MeetHosts(HostControlPlane* p,
                              const std::vector<int>& mine) {
  std::string packed;
  std::vector<std::string> all;
  if (p->leader()) {
    HVD_RETURN_IF_ERROR(p->cross_->Exchange(RankList(mine), &all, true));
    PackBlocks(all, &packed);
  }
  if (p->local_) {
    HVD_RETURN_IF_ERROR(p->local_->Exchange(packed, &all, true));
    packed.swap(all[0]);
  }
  if (!UnpackBlocks(packed, &all)) {
    return Status::DataLoss("control plane", "malformed list of the hosts");
  }
  HostRanks hosts;
  for (const std::string& h : all) hosts.push_back(ParseRankList(h));
  return hosts;
}

}  // namespace

StatusOr<std::unique_ptr<ControlPlane>> CreateHostControlPlane(
    const HostControlOptions& o, Store& store) {
  auto plane = std::make_unique<HostControlPlane>(o);
  HostControlPlane* p = plane.get();
  if (o.local.size > 1) {
    HVD_ASSIGN_OR_RETURN(
        p->local_, CreateShmControlPlane(
                       o.local, store, [p](int q) { return p->RingLocal(q); }));
  }
  HVD_ASSIGN_OR_RETURN(std::vector<int> local_ranks,
                       MeetLocally(p->local_.get(), o.job.rank));
  // The bells: a leader's from each rank of its host, by job rank.
  std::vector<int> bell_peers;
  if (p->leader()) {
    bell_peers.assign(local_ranks.begin() + 1, local_ranks.end());
  } else {
    bell_peers.push_back(local_ranks[0]);
  }
  if (!bell_peers.empty()) {
    HVD_ASSIGN_OR_RETURN(
        std::vector<std::vector<Fd>> bells,
        ConnectPeers(o.job, store, "hbell", "host control bells", bell_peers));
    for (int q : bell_peers) p->bells_.push_back(std::move(bells[q][0]));
  }
  if (p->leader()) {
    ControlOptions cross = o.cross;
    cross.leaders = true;
    for (const Fd& b : p->bells_) cross.wake_fds.push_back(b.get());
    HVD_ASSIGN_OR_RETURN(p->cross_, CreateTcpControlPlane(cross, store));
  }
  HVD_ASSIGN_OR_RETURN(p->host_ranks_, MeetHosts(p, local_ranks));
  size_t ranks = 0;
  for (const auto& h : p->host_ranks_) ranks += h.size();
  if (ranks != static_cast<size_t>(o.job.size)) {
    return Status::Internal(
        "control plane", "the hosts' ranks add up to " + std::to_string(ranks) +
                             ", not the job's " + std::to_string(o.job.size));
  }
  // Hosts of one rank each: nothing meets in shared memory, and the
  // leaders' plane is the job's (host index = rank, as the hosts are
  // numbered in rank order).
  bool one_each = true;
  for (size_t h = 0; h < p->host_ranks_.size(); ++h) {
    one_each = one_each && p->host_ranks_[h].size() == 1 &&
               p->host_ranks_[h][0] == static_cast<int>(h);
  }
  if (one_each) return std::move(p->cross_);
  return std::unique_ptr<ControlPlane>(std::move(plane));
}

}  // namespace hvd::runtime
