#include "runtime/transport/tcp/control_bells.h"

#include <poll.h>
#include <sys/socket.h>

#include <array>

namespace hvd::runtime {

bool AnyReadable(const std::vector<int>& peers, const std::vector<Fd>& fds,
                 int timeout_ms) {
  std::array<pollfd, 64> some;
  std::vector<pollfd> many;
  pollfd* p = some.data();
  if (peers.size() > some.size()) {
    many.resize(peers.size());
    p = many.data();
  }
  size_t k = 0;
  for (int q : peers) p[k++] = {fds[q].get(), POLLIN, 0};
  return ::poll(p, k, timeout_ms) > 0;
}

ControlBells::ControlBells(std::vector<int> peers, std::vector<Fd> bells,
                           std::vector<int> wake_fds, int size)
    : peers_(std::move(peers)),
      bells_(std::move(bells)),
      wake_fds_(std::move(wake_fds)),
      rang_(static_cast<size_t>(size), false),
      wake_gone_(wake_fds_.size(), false) {}

void ControlBells::NewExchange() {
  for (int p : peers_) rang_[p] = false;
}

void ControlBells::Ring(int p) {
  if (rang_[p]) return;
  rang_[p] = true;
  const char one = 1;
  (void)!::send(bells_[p].get(), &one, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

bool ControlBells::Sleep(std::chrono::milliseconds timeout,
                         const std::vector<Fd>* frames) {
  std::vector<pollfd> fds{{wake_.fd(), POLLIN, 0}};
  for (int q : peers_) {
    fds.push_back({bells_[q].get(), POLLIN, 0});
    if (frames) fds.push_back({(*frames)[q].get(), POLLIN, 0});
  }
  for (size_t i = 0; i < wake_fds_.size(); ++i) {
    if (!wake_gone_[i]) fds.push_back({wake_fds_[i], POLLIN, 0});
  }
  (void)::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  wake_.Drain();
  char sink[64];
  for (size_t i = 0; i < wake_fds_.size(); ++i) {
    if (wake_gone_[i]) continue;
    ssize_t r;
    while ((r = ::recv(wake_fds_[i], sink, sizeof(sink), MSG_DONTWAIT)) > 0) {
    }
    // Hung up: its rank left (or died, which its own exchange names).
    if (r == 0) wake_gone_[i] = true;
  }
  bool hung_up = false;
  for (int q : peers_) {
    ssize_t r;
    while ((r = ::recv(bells_[q].get(), sink, sizeof(sink), MSG_DONTWAIT)) >
           0) {
    }
    if (r == 0) hung_up = true;
  }
  return hung_up;
}

}  // namespace hvd::runtime
