#include "runtime/transport/tcp/tcp_steps.h"

namespace hvd::runtime {

TcpSteps::TcpSteps(const TcpStepOptions& options,
                   std::vector<std::vector<Fd>> sockets)
    : options_(options), sockets_(std::move(sockets)) {}

int TcpSteps::StreamsFor(size_t bytes) const {
  if (!several_ || bytes < options_.stream_bytes) return 1;
  return std::max(
      1, std::min<int>(options_.streams,
                       static_cast<int>(bytes / options_.stream_bytes)));
}

int TcpSteps::Sockets() const {
  int n = 0;
  for (const auto& peer : sockets_) n += static_cast<int>(peer.size());
  return n;
}

// Each direction's block in slices, one per stream, cut at whole elements
// the same way at both ends (from the block's size alone).
void TcpSteps::Slices(size_t bytes, size_t esize, std::vector<Slice>* v) const {
  const int k = StreamsFor(bytes);
  const size_t elems = bytes / esize;
  v->clear();
  for (int i = 0; i < k; ++i) {
    const size_t begin = elems * i / k * esize;
    v->push_back({begin, elems * (i + 1) / k * esize, begin, begin});
  }
}

Status TcpSteps::SendSome(int to, const uint8_t* out, size_t* left,
                          bool* progress) {
  for (size_t i = 0; i < sends_.size(); ++i) {
    Slice& w = sends_[i];
    if (w.done == w.end) continue;
    ssize_t got = ::send(sockets_[to][i].get(), out + w.done, w.end - w.done,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
    if (got > 0) {
      w.done += static_cast<size_t>(got);
      *left -= static_cast<size_t>(got);
      *progress = true;
    } else if (errno == EPIPE || errno == ECONNRESET) {
      return PeerFailed(to, "closed its connection (it exited or crashed)");
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return PeerFailed(to, Errno("send"));
    }
  }
  return Status::Ok();
}

Status TcpSteps::Sleep(int to, int from,
                       std::chrono::steady_clock::time_point deadline) {
  fds_.clear();
  for (size_t i = 0; i < sends_.size(); ++i) {
    if (sends_[i].done < sends_[i].end) {
      fds_.push_back({sockets_[to][i].get(), POLLOUT, 0});
    }
  }
  for (size_t i = 0; i < recvs_.size(); ++i) {
    if (recvs_[i].done < recvs_[i].end) {
      fds_.push_back({sockets_[from][i].get(), POLLIN, 0});
    }
  }
  if (::poll(fds_.data(), fds_.size(), RemainingMs(deadline)) < 0 &&
      errno != EINTR) {
    return Status::Internal(Where(), Errno("poll"));
  }
  return Status::Ok();
}

Status TcpSteps::TimedOut(int peer) const {
  return Status::DeadlineExceeded(
      Where(), "rank " + std::to_string(peer) + " did not keep up within " +
                   std::to_string(options_.op_timeout.count() / 1000) +
                   " s (raise HOROVOD_GLOO_TIMEOUT_SECONDS if it is only "
                   "slow)");
}

Status TcpSteps::PeerFailed(int peer, const std::string& what) const {
  return Status::Unavailable(Where(),
                             "rank " + std::to_string(peer) + " " + what);
}

std::string TcpSteps::Where() const {
  return "rank " + std::to_string(options_.rank) + ": TCP ring";
}

}  // namespace hvd::runtime
