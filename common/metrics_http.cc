#include "common/metrics_http.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

namespace hvd::metrics {
namespace {

void WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

std::string Response(int code, const char* reason, const std::string& type,
                     const std::string& body) {
  return "HTTP/1.1 " + std::to_string(code) + " " + reason +
         "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

// The value of header `name` (lower case) in `request`, "" when absent.
std::string Header(const std::string& request, const std::string& name) {
  size_t at = request.find("\r\n");
  while (at != std::string::npos) {
    const size_t start = at + 2;
    const size_t end = request.find("\r\n", start);
    if (end == std::string::npos || end == start) break;
    const std::string line = request.substr(start, end - start);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string key = line.substr(0, colon);
      for (char& c : key) c = static_cast<char>(std::tolower(c));
      if (key == name) {
        size_t v = line.find_first_not_of(" \t", colon + 1);
        return v == std::string::npos ? "" : line.substr(v);
      }
    }
    at = end;
  }
  return "";
}

}  // namespace

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    int port, std::function<std::string()> exposition,
    const std::string& flag) {
  std::map<std::string, Page> pages;
  pages["/metrics"] = {"text/plain; version=0.0.4; charset=utf-8",
                       std::move(exposition)};
  return Start(port, std::move(pages), flag);
}

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    int port, std::map<std::string, Page> pages, const std::string& flag) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->pages_ = std::move(pages);
  s->listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->listen_fd_ < 0) {
    return Status::Internal(flag, std::strerror(errno));
  }
  int one = 1;
  ::setsockopt(s->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) !=
          0 ||
      ::listen(s->listen_fd_, 16) != 0) {
    return Status::Unavailable(flag + " " + std::to_string(port),
                               std::string("cannot listen: ") +
                                   std::strerror(errno) +
                                   " (is the port in use? pick another)");
  }
  socklen_t len = sizeof(addr);
  ::getsockname(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  s->port_ = ntohs(addr.sin_port);
  if (::pipe2(s->wake_, O_CLOEXEC) != 0) {
    return Status::Internal("pipe", std::strerror(errno));
  }
  HttpServer* raw = s.get();
  s->thread_ = std::thread([raw] { raw->Loop(); });
  return s;
}

HttpServer::~HttpServer() {
  if (thread_.joinable()) {
    (void)!::write(wake_[1], "x", 1);
    thread_.join();
  }
  for (int fd : {listen_fd_, wake_[0], wake_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void HttpServer::Loop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    int n = ::poll(fds, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || fds[1].revents) return;
    if (!fds[0].revents) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Serve(fd);
    ::close(fd);
  }
}

void HttpServer::Serve(int fd) {
  // The request line is enough; a slow or silent client gets 2 s.
  std::string request;
  char buf[2048];
  while (request.find("\r\n\r\n") == std::string::npos &&
         request.size() < 8192) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 2000) <= 0) return;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return;
    request.append(buf, static_cast<size_t>(n));
  }
  const std::string line = request.substr(0, request.find("\r\n"));
  const bool get = line.rfind("GET ", 0) == 0;
  std::string path =
      get ? line.substr(4, line.find(' ', 4) - 4) : std::string();
  const size_t mark = path.find('?');
  Request req;
  req.query = mark == std::string::npos ? std::string() : path.substr(mark + 1);
  path = path.substr(0, mark);
  req.authorization = Header(request, "authorization");
  std::string served;
  for (const auto& [p, page] : pages_)
    served += (served.empty() ? "" : ", ") + p;
  const auto page = pages_.find(path);
  if (get && page != pages_.end()) {
    const Page& p = page->second;
    Reply reply = p.answer ? p.answer(req) : Reply{200, p.body()};
    WriteAll(fd, reply.code == 200
                     ? Response(200, "OK", p.type, reply.body)
                     : Response(403, "Forbidden", "text/plain", reply.body));
  } else if (!get) {
    WriteAll(fd, Response(405, "Method Not Allowed", "text/plain",
                          "only GET " + served + "\n"));
  } else {
    WriteAll(fd, Response(404, "Not Found", "text/plain",
                          "hvd serves " + served + "\n"));
  }
}

}  // namespace hvd::metrics
