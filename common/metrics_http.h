// GET /metrics over plain HTTP for Prometheus: horovodrun's --metrics-port
// (which also serves /debug/collectives) and hvd-rendezvousd's. One
// thread, one request per connection.
#pragma once

#include <functional>
#include <map>
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
  // What a page that takes them gets of a request: its query string and
  // its Authorization header ("" when absent).
  struct Request {
    std::string query, authorization;
  };
  // An answer's status (200, or 403 for a page behind a token) and body.
  struct Reply {
    int code = 200;
    std::string body;
  };
  // A page: its content type and what makes its body on each GET; or,
  // for a page that reads the request, `answer`.
  struct Page {
    std::string type;
    std::function<std::string()> body;
    std::function<Reply(const Request&)> answer = nullptr;
  };

  static StatusOr<std::unique_ptr<HttpServer>> Start(
      int port, std::function<std::string()> exposition,
      const std::string& flag = "--metrics-port");
  // The same with pages of its own, by path ("/metrics" among them, or
  // not); a query string after the path goes to the page's `answer`.
  static StatusOr<std::unique_ptr<HttpServer>> Start(
      int port, std::map<std::string, Page> pages, const std::string& flag);
  ~HttpServer();
  int port() const { return port_; }

 private:
  HttpServer() = default;
  void Loop();
  void Serve(int fd);

  std::map<std::string, Page> pages_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = 0;
  std::thread thread_;
};

}  // namespace hvd::metrics
