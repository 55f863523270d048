// One step of a collective on hvd's own sockets (tcp_ring.h): a block goes
// to one peer while a block comes from another, on the calling thread,
// each cut into one slice per stream where it is large (one TCP flow
// rarely fills a fast link, several together can). What arrives is
// reported in whole elements and in pieces, so a reduction overlaps the
// rest of the transfer. Owns the sockets, by peer and then stream.
//
// Not thread-safe: one step at a time.
#pragma once

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/transport/tcp/tcp_mesh.h"

namespace hvd::runtime {

struct TcpStepOptions {
  int rank = 0;
  // Sockets to each peer, and the bytes of a step per stream below which
  // it uses fewer (TcpRingOptions).
  int streams = 1;
  size_t stream_bytes = size_t{1} << 20;
  // How long a step retries its sockets before it sleeps in poll
  // (TcpRingOptions::spin), and how long it waits for a peer in all.
  std::chrono::microseconds spin{50};
  std::chrono::milliseconds op_timeout{30000};
};

class TcpSteps {
 public:
  // `sockets[p]`: the streams to peer p (empty where not connected).
  TcpSteps(const TcpStepOptions& options, std::vector<std::vector<Fd>> sockets);

  // Sends [out, out + out_bytes) to rank `to` while receiving in_bytes
  // from rank `from` into `in`, each over StreamsFor(bytes) streams;
  // `arrived(from, to)` is told of each byte range of whole elements that
  // came in, in pieces of at least kReducePiece (the last whatever its
  // size). `behind_send`: a range is reported only once the same range of
  // `out` has been sent (the reduction writes where the send reads).
  template <typename F>
  Status Step(int to, const uint8_t* out, size_t out_bytes, int from,
              uint8_t* in, size_t in_bytes, size_t esize, bool behind_send,
              F&& arrived);

  // The streams a step of `bytes` goes over.
  int StreamsFor(size_t bytes) const;
  // Autotune's choice (every rank makes it in the same cycle, since both
  // ends of a step must cut it alike): large steps over the streams, or
  // everything over the first.
  void SetSeveralStreams(bool on) { several_ = on; }
  // Sockets held, every stream counted (tests).
  int Sockets() const;
  bool Connected(int peer) const { return !sockets_[peer].empty(); }
  // Adds the streams to a peer not connected before.
  void Add(int peer, std::vector<Fd> streams) {
    sockets_[peer] = std::move(streams);
  }

  // Arrived input is reported in pieces of at least this much.
  static constexpr size_t kReducePiece = 256 << 10;

 private:
  // A direction's part on one stream: [begin, end), how far it got, and
  // (received) how far it was reported.
  struct Slice {
    size_t begin, end, done, reported;
  };
  void Slices(size_t bytes, size_t esize, std::vector<Slice>* out) const;
  // Tells `arrived` of what `r` received in whole elements, and behind the
  // send only what `sent` has sent of the same bytes.
  template <typename F>
  void ReportArrived(Slice& r, const Slice* sent, size_t esize, F& arrived);
  // Moves what the sockets take and give now; Unavailable naming the peer
  // where one is gone.
  Status SendSome(int to, const uint8_t* out, size_t* left, bool* progress);
  template <typename F>
  Status ReceiveSome(int from, uint8_t* in, size_t* left, bool* progress,
                     F&& received);
  // Polls the step's unfinished sockets until one is ready.
  Status Sleep(int to, int from,
               std::chrono::steady_clock::time_point deadline);
  Status TimedOut(int peer) const;
  Status PeerFailed(int peer, const std::string& what) const;
  std::string Where() const;

  const TcpStepOptions options_;
  std::vector<std::vector<Fd>> sockets_;
  bool several_ = true;
  std::vector<Slice> sends_, recvs_;  // the step's, reused
  std::vector<pollfd> fds_;
};

template <typename F>
void TcpSteps::ReportArrived(Slice& r, const Slice* sent, size_t esize,
                             F& arrived) {
  size_t whole = r.done - (r.done - r.begin) % esize;
  // Slices begin at whole elements: so does what was sent, cut down.
  if (sent) whole = std::min(whole, sent->done - sent->done % esize);
  if (whole > r.reported &&
      (whole - r.reported >= kReducePiece || whole == r.end)) {
    arrived(r.reported, whole);
    r.reported = whole;
  }
}

template <typename F>
Status TcpSteps::ReceiveSome(int from, uint8_t* in, size_t* left,
                             bool* progress, F&& received) {
  for (size_t i = 0; i < recvs_.size(); ++i) {
    Slice& r = recvs_[i];
    if (r.done == r.end) continue;
    ssize_t got = ::recv(sockets_[from][i].get(), in + r.done, r.end - r.done,
                         MSG_DONTWAIT);
    if (got > 0) {
      r.done += static_cast<size_t>(got);
      *left -= static_cast<size_t>(got);
      *progress = true;
      received(i);
    } else if (got == 0 || errno == ECONNRESET) {
      return PeerFailed(from, "closed its connection (it exited or crashed)");
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return PeerFailed(from, Errno("recv"));
    }
  }
  return Status::Ok();
}

template <typename F>
Status TcpSteps::Step(int to, const uint8_t* out, size_t out_bytes, int from,
                      uint8_t* in, size_t in_bytes, size_t esize,
                      bool behind_send, F&& arrived) {
  using Clock = std::chrono::steady_clock;
  Slices(out_bytes, esize, &sends_);
  Slices(in_bytes, esize, &recvs_);
  // Behind the send, slice i of the input waits for slice i of the output
  // (the same bytes: both buffers are as large, and cut alike).
  auto report = [&](size_t i) {
    ReportArrived(recvs_[i], behind_send ? &sends_[i] : nullptr, esize,
                  arrived);
  };
  size_t left_to_send = out_bytes, left_to_recv = in_bytes;
  const auto deadline = Clock::now() + options_.op_timeout;
  auto spin_until = Clock::now() + options_.spin;
  while (left_to_send > 0 || left_to_recv > 0) {
    bool progress = false;
    HVD_RETURN_IF_ERROR(SendSome(to, out, &left_to_send, &progress));
    HVD_RETURN_IF_ERROR(
        ReceiveSome(from, in, &left_to_recv, &progress, report));
    const auto now = Clock::now();
    if (progress) {
      spin_until = now + options_.spin;
      continue;
    }
    if (now < spin_until) {
      // The peer may need this CPU to answer: ranks sharing a host's cores
      // (as many as a host runs, or hosts sharing a machine) would
      // otherwise spin through each other's turns.
      sched_yield();
      continue;
    }
    if (now >= deadline) return TimedOut(left_to_recv ? from : to);
    HVD_RETURN_IF_ERROR(Sleep(to, from, deadline));
    spin_until = Clock::now() + options_.spin;
  }
  // What waited for its send.
  for (size_t i = 0; i < recvs_.size(); ++i) report(i);
  return Status::Ok();
}

}  // namespace hvd::runtime
