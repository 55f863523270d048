#include "runtime/transport/tcp/tcp_control.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "runtime/transport/tcp/control_bells.h"
#include "runtime/transport/tcp/control_frame.h"
#include "runtime/transport/tcp/doubling.h"
#include "runtime/transport/tcp/tcp_mesh.h"

namespace hvd::runtime {

const char* ControlExchangeName(ControlExchange e) {
  return e == ControlExchange::kMesh ? "mesh" : "recursive doubling";
}

ControlExchange ChooseControlExchange(int size, int64_t mesh_max_ranks) {
  return size <= mesh_max_ranks ? ControlExchange::kMesh
                                : ControlExchange::kDoubling;
}

namespace {

using Clock = std::chrono::steady_clock;

// Far above any cycle's frame; a length past it means a corrupt stream.
constexpr uint32_t kMaxFrame = 1u << 30;

// The peers of an exchange: every other rank, or the doubling's.
std::vector<int> ExchangePeers(const ControlOptions& o) {
  if (o.exchange == ControlExchange::kDoubling) {
    return DoublingPeers(o.rank, o.size);
  }
  std::vector<int> all;
  for (int p = 0; p < o.size; ++p) {
    if (p != o.rank) all.push_back(p);
  }
  return all;
}

class TcpControlPlane final : public ControlPlane {
 public:
  // `socks[p]`: the frame connection to peer p; `bells[p]`: a second one,
  // which carries a byte when p gave up waiting for this rank's callers
  // (its engine thread must answer). Empty for ranks that are no peer.
  TcpControlPlane(const ControlOptions& o, std::vector<int> peers,
                  std::vector<Fd> socks, std::vector<Fd> bells)
      : options_(o),
        peers_(std::move(peers)),
        socks_(std::move(socks)),
        bells_(peers_, std::move(bells), o.wake_fds, o.size),
        doubling_(PlanDoubling(o.rank, o.size)) {
    const size_t n = static_cast<size_t>(o.size);
    in_.resize(n);
    in_len_.resize(n);
    in_got_.resize(n);
    len_buf_.resize(n);
    in_kind_.resize(n);
    out_sent_.resize(n);
    pfds_.resize(2 * n);
    traffic_.sockets = 2 * static_cast<int>(peers_.size());
  }

  void Notify() override { bells_.Notify(); }

  void Wait(std::chrono::milliseconds timeout, bool* peer) override {
    Sleep(timeout, /*started_wakes=*/true, peer);
  }
  void WaitForCaller(std::chrono::milliseconds timeout, bool* peer) override {
    Sleep(timeout, /*started_wakes=*/false, peer);
  }

  // A caller may run the cycles: whether a peer has started an exchange is
  // whether its bytes wait on a socket (a doubling peer sends only once
  // its earlier trips are done, and every exchange reaches every rank's
  // first peer within a trip).
  bool Drivable() const override { return true; }
  bool PeerWaiting() override { return AnyReadable(peers_, socks_, 0); }
  bool AwaitPeer() override {
    const auto until = Clock::now() + Spin();
    do {
      if (PeerWaiting()) return true;
      sched_yield();
    } while (Clock::now() < until);
    return false;
  }
  // A ring that came while a caller drove is still unread: the engine
  // thread reads the bells.
  bool PeerRangWhileDriving() override { return bells_.Rang(); }

  Traffic traffic() const override { return traffic_; }

  // Only the doubling merges: the mesh's every message goes to everyone.
  void SetMerger(Merger* m) override { merger_ = m; }
  const std::vector<int>* MergedGroups() const override {
    return parts_.merged ? &parts_.group : nullptr;
  }

  // How long to spin for peers before ringing them and sleeping
  // (ControlOptions::spin): 4 times an urgent exchange's recent time,
  // within 1 to 16 times the option.
  std::chrono::microseconds Spin() const {
    return std::clamp(4 * typical_, options_.spin, 16 * options_.spin);
  }

  Status Exchange(const std::string& mine, std::vector<std::string>* all,
                  bool urgent) override {
    if (!broken_.ok()) return broken_;
    spin_ = urgent ? Spin() : std::chrono::microseconds(0);
    bells_.NewExchange();
    traffic_.exchanges++;
    const auto start = Clock::now();
    Status s = Run(mine, all);
    if (!s.ok()) {
      broken_ = s;
      TellPeers(s);
    } else if (urgent) {
      // A running mean over about the last 8 urgent exchanges.
      const auto took = std::chrono::duration_cast<std::chrono::microseconds>(
          Clock::now() - start);
      typical_ += (took - typical_) / 8;
    }
    return s;
  }

 private:
  Status Run(const std::string& mine, std::vector<std::string>* all) {
    // The caller's strings are filled in place (swapped back below), so
    // each peer's message alternates between two buffers, as received and
    // as read: the exchange's working set stays small.
    parts_.all.swap(*all);
    Status s = Fill(mine);
    all->swap(parts_.all);
    return s;
  }

  Status Fill(const std::string& mine) {
    const int n = options_.size, me = options_.rank;
    parts_.Reset(n);
    parts_.known[me] = true;
    alone_ = true;
    if (options_.exchange == ControlExchange::kMesh) {
      // Sent from where it lies; this rank's entry once the peers' are in.
      own_ = mine;
      HVD_RETURN_IF_ERROR(Send(peers_, peers_));
      parts_.all[me] = mine;
    } else {
      // A copy: merging may write this rank's entry.
      parts_.all[me] = mine;
      own_ = parts_.all[me];
      HVD_RETURN_IF_ERROR(Doubling());
    }
    for (int r = 0; r < n; ++r) {
      if (!parts_.known[r]) {
        return Status::DataLoss(
            Where(), "the exchange ended without rank " + std::to_string(r) +
                         "'s message (a peer sent a corrupt frame)");
      }
    }
    return Status::Ok();
  }

  Status Doubling() {
    const DoublingPlan& plan = doubling_;
    const std::vector<int> fold = {plan.fold}, none;
    if (plan.extra) {
      HVD_RETURN_IF_ERROR(Send(fold, none));
      return Send(none, fold);
    }
    // This rank's block (the ranks it has heard of) is one group while
    // every merge so far took: only then may it merge with the next.
    one_group_ = merger_ != nullptr;
    // A rank waits only on peers it has sent something in this exchange,
    // so a peer asleep until one starts (Wait) is woken by it: the extra
    // rank's first word would come only after its own, so it is told of
    // the start.
    if (plan.fold >= 0) {
      HVD_RETURN_IF_ERROR(Send(fold, fold, FrameKind::kStart));
      MergeLearned();
    }
    for (int partner : plan.partners) {
      partner_[0] = partner;
      HVD_RETURN_IF_ERROR(Send(partner_, partner_));
      MergeLearned();
    }
    if (plan.fold >= 0) return Send(fold, none);
    return Status::Ok();
  }

  // After a doubling step: the block just learned merges with this rank's
  // where each is one group and the merger takes their messages. Both
  // ends of the step hold the same two blocks and decide alike.
  void MergeLearned() {
    if (!one_group_ || parts_.learned.empty()) {
      one_group_ = false;
      return;
    }
    const int mine = parts_.group[options_.rank];
    const int theirs = parts_.group[parts_.learned[0]];
    for (int r : parts_.learned) {
      if (parts_.group[r] != theirs) {
        one_group_ = false;
        return;
      }
    }
    const int low = std::min(mine, theirs), high = std::max(mine, theirs);
    if (!merger_->Merge(parts_.all[low], parts_.all[high], &merged_)) {
      one_group_ = false;
      return;
    }
    parts_.all[low].swap(merged_);
    parts_.all[high].clear();
    traffic_.merges++;
    for (int r = 0; r < options_.size; ++r) {
      if (parts_.known[r] && parts_.group[r] == high) parts_.group[r] = low;
    }
    parts_.merged = true;
  }

  // One trip: the frame of every rank known so far to each of `to` (or a
  // start frame), while each of `from` sends its own, read into parts_.
  // A frame of this rank's message alone goes as an own frame: its head
  // in frame_, the message from where it lies (body_).
  Status Send(const std::vector<int>& to, const std::vector<int>& from,
              FrameKind kind = FrameKind::kParts) {
    frame_.clear();
    body_ = {};
    if (kind == FrameKind::kStart) {
      PutStartFrame(&frame_);
    } else if (!to.empty() && alone_) {
      PutOwnFrameHead(own_.size(), &frame_);
      body_ = own_;
    } else if (!to.empty()) {
      PutPartsFrame(parts_, &frame_);
    }
    const size_t total = frame_.size() + body_.size();
    if (total - 4 >= kMaxFrame && !to.empty()) {
      return Status::InvalidArgument(Where(), "control message too large");
    }
    for (int p : to) {
      out_sent_[p] = 0;
      sending_[p] = true;
      traffic_.frames++;
      traffic_.bytes += total;
    }
    for (int p : from) {
      in_len_[p] = UINT32_MAX;
      in_got_[p] = 0;
    }
    HVD_RETURN_IF_ERROR(Trip(to, from));
    for (int p : to) sending_[p] = false;
    return Status::Ok();
  }

  // Moves the bytes of a trip until every frame is out and in.
  Status Trip(const std::vector<int>& to, const std::vector<int>& from) {
    size_t sends = to.size(), recvs = from.size();
    const auto deadline = Clock::now() + options_.op_timeout;
    auto spin_until = Clock::now() + spin_;
    while (sends > 0 || recvs > 0) {
      bool progress = false;
      for (int p : to) {
        if (out_sent_[p] == OutBytes()) continue;
        HVD_RETURN_IF_ERROR(SendSome(p, &progress));
        if (out_sent_[p] == OutBytes()) --sends;
      }
      for (int p : from) {
        if (in_len_[p] != UINT32_MAX && in_got_[p] == in_len_[p]) continue;
        bool done = false;
        HVD_RETURN_IF_ERROR(ReceiveSome(p, &progress, &done));
        if (done && in_kind_[p] == static_cast<char>(FrameKind::kStart)) {
          // The peer's exchange has begun; its parts come next.
          in_len_[p] = UINT32_MAX;
          in_got_[p] = 0;
          done = false;
        }
        if (done) {
          HVD_RETURN_IF_ERROR(TakeFrame(p));
          --recvs;
        }
      }
      if (sends == 0 && recvs == 0) break;
      if (progress) {
        spin_until = Clock::now() + spin_;
        continue;
      }
      const auto now = Clock::now();
      if (now < spin_until) {
        sched_yield();  // see ControlOptions::spin
        continue;
      }
      if (now >= deadline) return TimedOut(from);
      // Peers that have not started this trip: their callers did not come
      // within the spin (or they wait on peers of their own), so their
      // engine threads answer.
      for (int p : from) {
        if (in_len_[p] == UINT32_MAX && in_got_[p] == 0) bells_.Ring(p);
      }
      HVD_RETURN_IF_ERROR(Poll(to, from, deadline));
      spin_until = Clock::now() + spin_;
    }
    return Status::Ok();
  }

  // The bytes of the frame going out: frame_, then body_.
  size_t OutBytes() const { return frame_.size() + body_.size(); }

  // Writes what the socket takes of the frame to peer p.
  Status SendSome(int p, bool* progress) {
    const int fd = socks_[p].get();
    while (out_sent_[p] < OutBytes()) {
      const size_t at = out_sent_[p];
      iovec iov[2];
      int cnt = 0;
      if (at < frame_.size()) {
        iov[cnt++] = {frame_.data() + at, frame_.size() - at};
      }
      const size_t body_at = at < frame_.size() ? 0 : at - frame_.size();
      if (body_at < body_.size()) {
        iov[cnt++] = {const_cast<char*>(body_.data()) + body_at,
                      body_.size() - body_at};
      }
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = cnt;
      const ssize_t w = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w > 0) {
        out_sent_[p] += static_cast<size_t>(w);
        *progress = true;
        continue;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EPIPE || errno == ECONNRESET) return PeerGone(p);
      return PeerFailed(p, Errno("send"));
    }
    return Status::Ok();
  }

  // Reads what has come of peer p's frame: its head (length and kind),
  // then its body into in_[p].
  Status ReceiveSome(int p, bool* progress, bool* done) {
    const int fd = socks_[p].get();
    for (;;) {
      const bool head = in_len_[p] == UINT32_MAX;
      char* at =
          head ? len_buf_[p].data() + in_got_[p] : in_[p].data() + in_got_[p];
      const size_t want =
          head ? kFrameHead - in_got_[p] : in_len_[p] - in_got_[p];
      const ssize_t r = ::recv(fd, at, want, MSG_DONTWAIT);
      if (r == 0) return PeerGone(p);
      if (r < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::Ok();
        if (errno == ECONNRESET) return PeerGone(p);
        return PeerFailed(p, Errno("recv"));
      }
      *progress = true;
      in_got_[p] += static_cast<size_t>(r);
      if (head && in_got_[p] == kFrameHead) {
        uint32_t len;
        std::memcpy(&len, len_buf_[p].data(), 4);
        if (len == 0 || len >= kMaxFrame) {
          return PeerFailed(p, "sent a corrupt control frame");
        }
        in_kind_[p] = len_buf_[p][4];
        in_len_[p] = len - 1;
        in_got_[p] = 0;
        in_[p].resize(len - 1);
      }
      if (in_len_[p] != UINT32_MAX && in_got_[p] == in_len_[p]) {
        *done = true;
        return Status::Ok();
      }
    }
  }

  // A whole frame from peer p: its ranks' messages, or its failure.
  Status TakeFrame(int p) {
    const std::string_view body(in_[p]);
    const char kind = in_kind_[p];
    alone_ = false;
    if (kind == static_cast<char>(FrameKind::kOwn)) {
      parts_.all[p].swap(in_[p]);
      parts_.known[p] = true;
      parts_.group[p] = p;
      parts_.learned.assign(1, p);
      return Status::Ok();
    }
    if (kind == static_cast<char>(FrameKind::kAbort) && !body.empty()) {
      // The reason as the rank that failed first put it, passed on.
      forwarded_ = true;
      const auto code = static_cast<StatusCode>(body[0]);
      return Status(code == StatusCode::kOk ? StatusCode::kUnavailable : code,
                    Where() + ": " + std::string(body.substr(1)));
    }
    if (kind != static_cast<char>(FrameKind::kParts) ||
        !ReadPartsFrame(body, &parts_)) {
      return PeerFailed(p, "sent a corrupt control frame");
    }
    return Status::Ok();
  }

  // Sleeps until a socket of the trip is ready or the deadline passes.
  Status Poll(const std::vector<int>& to, const std::vector<int>& from,
              Clock::time_point deadline) {
    int k = 0;
    for (int p : to) {
      if (out_sent_[p] < OutBytes()) pfds_[k++] = {socks_[p].get(), POLLOUT, 0};
    }
    for (int p : from) {
      if (in_len_[p] == UINT32_MAX || in_got_[p] < in_len_[p]) {
        pfds_[k++] = {socks_[p].get(), POLLIN, 0};
      }
    }
    const int ready = ::poll(pfds_.data(), k, RemainingMs(deadline));
    if (ready < 0 && errno != EINTR) {
      return Status::Internal(Where(), Errno("poll"));
    }
    return Status::Ok();
  }

  // After this rank's exchange failed: each peer gets the reason (a peer
  // halfway through a frame from this rank cannot read one, so its
  // connection is cut, which it reads as this rank gone), and a ring, so
  // that a peer asleep learns of it too.
  void TellPeers(const Status& s) {
    std::string reason(1, static_cast<char>(s.code()));
    const std::string& message = s.message();
    const std::string mine = Where() + ": ";
    // A reason passed on keeps its words; one found here says who found it.
    if (message.compare(0, mine.size(), mine) == 0) {
      reason += message.substr(mine.size());
    } else {
      reason += message;
    }
    if (!forwarded_) reason += " (found by " + Name(options_.rank) + ")";
    std::string abort;
    PutAbortFrame(reason, &abort);
    for (int p : peers_) {
      const int fd = socks_[p].get();
      const bool halfway =
          sending_[p] && out_sent_[p] > 0 && out_sent_[p] < OutBytes();
      if (halfway ||
          ::send(fd, abort.data(), abort.size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
              static_cast<ssize_t>(abort.size())) {
        ::shutdown(fd, SHUT_RDWR);
      }
      bells_.Ring(p);
    }
  }

  // The engine thread's sleep until a Notify, a ring, a peer's exchange
  // (`started_wakes`; while this rank's callers drive, they join it) or
  // the timeout. *peer: a peer has started an exchange (or hung up).
  void Sleep(std::chrono::milliseconds timeout, bool started_wakes,
             bool* peer) {
    *peer = false;
    if (!broken_.ok()) return;
    if (bells_.Sleep(timeout, started_wakes ? &socks_ : nullptr)) *peer = true;
    if (PeerWaiting()) *peer = true;
  }

  // A rank of this plane as errors name it.
  std::string Name(int p) const {
    return options_.leaders ? "the leader of host " + std::to_string(p)
                            : "rank " + std::to_string(p);
  }

  std::string Where() const { return Name(options_.rank) + ": control plane"; }

  Status PeerFailed(int p, const std::string& what) const {
    return Status::Unavailable(Where(), Name(p) + " " + what);
  }

  Status PeerGone(int p) const {
    return PeerFailed(p, "closed its connection (it exited or crashed)");
  }

  // Names the peers of the trip whose frame did not come: in a doubling
  // they may themselves wait on a rank further off, whose silence they
  // then report to their peers.
  Status TimedOut(const std::vector<int>& from) const {
    std::string silent;
    for (int p : from) {
      if (in_len_[p] == UINT32_MAX || in_got_[p] < in_len_[p]) {
        silent += (silent.empty() ? "" : ", ") + Name(p);
      }
    }
    return Status::DeadlineExceeded(
        Where(), "no message from " + silent + " within " +
                     std::to_string(options_.op_timeout.count() / 1000) +
                     " s (raise HOROVOD_GLOO_TIMEOUT_SECONDS if they are only "
                     "slow)");
  }

  const ControlOptions options_;
  const std::vector<int> peers_;
  std::vector<Fd> socks_;  // by rank; empty for ranks not peers
  ControlBells bells_;
  const DoublingPlan doubling_;
  std::chrono::microseconds spin_{0};  // this exchange's
  // An urgent exchange's recent time: written by Exchange and read by
  // AwaitPeer, both under the engine's cycle lock (cycle_driver.h).
  std::chrono::microseconds typical_{0};
  Status broken_;
  bool forwarded_ = false;  // broken_ came from a peer's abort frame
  Traffic traffic_;
  // The exchange: what is known of the ranks' messages, the frame going
  // out (and how far it went to each peer, whether it is still going), and
  // each peer's frame coming in (its length once read).
  Parts parts_;
  Merger* merger_ = nullptr;
  bool one_group_ = false;  // this rank's block, while doubling
  std::string merged_;      // a merge's result, swapped in
  std::string frame_;
  std::vector<size_t> out_sent_;
  std::vector<bool> sending_ =
      std::vector<bool>(static_cast<size_t>(options_.size), false);
  std::vector<std::string> in_;
  std::vector<uint32_t> in_len_;
  std::vector<size_t> in_got_;
  std::vector<std::array<char, kFrameHead>> len_buf_;
  std::vector<char> in_kind_;
  std::string_view body_;  // an own frame's message
  std::string_view own_;   // this rank's message, this exchange
  bool alone_ = true;      // this rank knows only its own message
  std::vector<int> partner_ = std::vector<int>(1);  // a doubling round's
  std::vector<pollfd> pfds_;
};

}  // namespace

StatusOr<std::unique_ptr<ControlPlane>> CreateTcpControlPlane(
    const ControlOptions& o, Store& store) {
  std::vector<int> peers = ExchangePeers(o);
  HVD_ASSIGN_OR_RETURN(std::vector<std::vector<Fd>> mesh,
                       ConnectPeers(o, store, "ctl", "control plane", peers,
                                    /*streams=*/2));
  std::vector<Fd> socks, bells;
  for (auto& streams : mesh) {
    socks.push_back(streams.empty() ? Fd() : std::move(streams[0]));
    bells.push_back(streams.size() < 2 ? Fd() : std::move(streams[1]));
  }
  return std::unique_ptr<ControlPlane>(new TcpControlPlane(
      o, std::move(peers), std::move(socks), std::move(bells)));
}

}  // namespace hvd::runtime
