// The wake-up of an idle engine thread, shared by the control planes that
// sleep in poll(2): an eventfd, level-triggered.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace hvd::runtime {

class WakeFd {
 public:
  WakeFd() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~WakeFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }
  void Notify() {
    uint64_t one = 1;
    (void)!::write(fd_, &one, sizeof(one));
  }
  void Drain() {
    uint64_t v;
    while (::read(fd_, &v, sizeof(v)) > 0) {
    }
  }

 private:
  int fd_;
};

}  // namespace hvd::runtime
