// GET /metrics over plain HTTP for Prometheus: horovodrun's --metrics-port
// and hvd-rendezvousd's. One thread, one request per connection.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"

namespace hvd::metrics {

// Serves `exposition()` at /metrics on every address, port `port` (0: a
// free one), from a thread of its own, until destroyed. `flag` names the
// setting in errors ("--metrics-port").
class HttpServer {
 public:
  static StatusOr<std::unique_ptr<HttpServer>> Start(
      int port, std::function<std::string()> exposition,
      const std::string& flag = "--metrics-port");
  ~HttpServer();
  int port() const { return port_; }

 private:
  HttpServer() = default;
  void Loop();
  void Serve(int fd);

  std::function<std::string()> exposition_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = 0;
  std::thread thread_;
};

}  // namespace hvd::metrics
