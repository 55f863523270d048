// A real sshd for tests: its own host key and a user key the test made, on
// a free port of 127.0.0.1 or inside a network namespace of the test's.
// Ends only the sshd it started (and that sshd's own session processes).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace hvd::testing {

// A TCP port of `addr` free right now (0 when none).
int FreePort(const std::string& addr);

// Why this process cannot run the SSH tests ("" when it can): they log in
// as root@127.0.0.1 to an sshd of their own, and an sshd not started by
// root authenticates only the user it runs as.
std::string WhyNoRootLogin();

class SshHost {
 public:
  // Keys live in `dir`. `netns` empty: sshd on 127.0.0.1 on a free port.
  SshHost(const TempDir& dir, const std::string& name,
          const std::string& listen_addr = "127.0.0.1",
          const std::string& netns = "");
  ~SshHost();

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  const std::string& address() const { return addr_; }
  const std::string& user_key() const { return user_key_; }
  const std::string& host_public_key() const { return host_pub_; }
  pid_t pid() const;
  // SIGKILLs the listener and every sshd session process under it.
  void KillAll();
  // From now on this host accepts `other`'s user key instead of its own
  // (hosts of one job all take the key the launcher holds).
  void AcceptKeyOf(const SshHost& other);

 private:
  std::string dir_, addr_, user_key_, host_pub_, error_;
  int port_ = 0;
  bool ok_ = false;
  std::unique_ptr<Subprocess> sshd_;
};

// A bridge and network namespaces hvdtN with addresses 10.211.0.N/24, each
// its own "host". Removed on destruction. ok() false (with a reason) where
// namespaces cannot be made.
class TestNetwork {
 public:
  explicit TestNetwork(int hosts);
  ~TestNetwork();
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  std::string ns(int i) const { return "hvdt" + std::to_string(i); }
  std::string address(int i) const {
    return "10.211.0." + std::to_string(i + 2);
  }
  std::string bridge_address() const { return "10.211.0.1"; }

 private:
  std::string veth(int i) const { return ns(i) + "a"; }
  bool Create();
  void Remove();

  int hosts_;
  bool ok_ = false;
  std::string error_;
};

// Pids of every process whose parent chain leads to `root`.
std::vector<pid_t> Descendants(pid_t root);

}  // namespace hvd::testing
