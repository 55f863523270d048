#include "tests/util/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

namespace hvd::testing {

HttpResponse HttpGet(int port, const std::string& path,
                     const std::string& headers) {
  HttpResponse r;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return r;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return r;
  }
  const std::string req = "GET " + path +
                          " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: "
                          "close\r\n" +
                          headers + "\r\n";
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(req.size())) {
    close(fd);
    return r;
  }
  std::string raw;
  char buf[65536];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) raw.append(buf, n);
  close(fd);
  const size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos) return r;
  r.code = std::atoi(raw.c_str() + raw.find(' ') + 1);
  r.body = raw.substr(head_end + 4);
  // Prometheus answers in chunks: undo them.
  if (raw.substr(0, head_end).find("chunked") != std::string::npos) {
    std::string body, in = r.body;
    size_t at = 0;
    for (;;) {
      size_t eol = in.find("\r\n", at);
      if (eol == std::string::npos) break;
      size_t len = std::strtoul(in.c_str() + at, nullptr, 16);
      if (len == 0) break;
      body += in.substr(eol + 2, len);
      at = eol + 2 + len + 2;
    }
    r.body = body;
  }
  return r;
}

}  // namespace hvd::testing
