// A plain HTTP/1.1 GET to 127.0.0.1 for tests (the metrics endpoint,
// Prometheus' API): the status code and body, or code 0 when nothing
// answered.
#pragma once

#include <string>

namespace hvd::testing {

struct HttpResponse {
  int code = 0;
  std::string body;
};

// `headers`: more header lines, each ending in "\r\n".
HttpResponse HttpGet(int port, const std::string& path,
                     const std::string& headers = "");

}  // namespace hvd::testing
