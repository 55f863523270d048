// A real hvd-rendezvousd process for tests: a private token file, a port
// chosen by the daemon and read back from its "listening on" line.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace hvd::testing {

class Daemon {
 public:
  // Starts hvd-rendezvousd on `listen` with the admin token "admin-token".
  explicit Daemon(const TempDir& dir, std::vector<std::string> extra = {},
                  std::string listen = "127.0.0.1:0",
                  std::vector<std::string> env = {})
      : token_file_(dir.Write("admin-token", kAdminToken + std::string("\n"))) {
    std::vector<std::string> argv = {HVD_RENDEZVOUSD, "--listen", listen,
                                     "--admin-token-file", token_file_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    process_ = std::make_unique<Subprocess>(argv, env);
    address_ = process_->WaitForStderr("listening on (\\S+)",
                                       std::chrono::seconds(20));
  }
  ~Daemon() {
    if (!stopped_) Stop(SIGKILL);
  }

  static constexpr char kAdminToken[] = "admin-token";
  const std::string& address() const { return address_; }
  const std::string& token_file() const { return token_file_; }
  Subprocess& process() { return *process_; }

  Result Stop(int sig) {
    stopped_ = true;
    kill(process_->pid(), sig);
    return process_->Wait(std::chrono::seconds(30));
  }

 private:
  std::string token_file_;
  std::unique_ptr<Subprocess> process_;
  std::string address_;
  bool stopped_ = false;
};

// Certificates made with openssl for the TLS tests: a CA, a server
// certificate for 127.0.0.1, and a client certificate.
struct Certs {
  std::string ca, server_cert, server_key, client_cert, client_key;
};

inline bool MakeCerts(const TempDir& dir, Certs& out) {
  const std::string d = dir.path();
  std::string ext =
      dir.Write("san.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  std::string cmd =
      "cd " + d +
      " && "
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
      "-nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=hvd-test-ca && "
      "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
      "-keyout server.key -out server.csr -subj /CN=localhost && "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key "
      "-CAcreateserial -out server.pem -days 2 -extfile san.ext && "
      "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
      "-keyout client.key -out client.csr -subj /CN=hvd-client && "
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key "
      "-CAcreateserial -out client.pem -days 2 && "
      "chmod 600 server.key client.key";
  if (std::system((cmd + " >/dev/null 2>&1").c_str()) != 0) return false;
  out = {d + "/ca.pem", d + "/server.pem", d + "/server.key", d + "/client.pem",
         d + "/client.key"};
  return true;
}

}  // namespace hvd::testing
