// Real etcd members for tests (Debian's etcd-server): each on 127.0.0.1
// ports of its own with a data directory in the test's TempDir, one
// member or a cluster of several, started and ended by the test by pid.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/util/ssh_host.h"
#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace hvd::testing {

inline constexpr char kEtcd[] = "/usr/bin/etcd";
inline constexpr char kEtcdctl[] = "/usr/bin/etcdctl";

inline bool HaveEtcd() {
  return access(kEtcd, X_OK) == 0 && access(kEtcdctl, X_OK) == 0;
}

// TLS for the members' client port: their certificate, and the CA that
// signed it and the clients' (client certificates required).
struct EtcdTlsFiles {
  std::string ca, cert, key, client_cert, client_key;
};

class EtcdCluster {
 public:
  struct Member {
    std::string name, client, peer, data;
    std::unique_ptr<Subprocess> process;
  };

  // Starts `n` members and waits until each serves clients.
  EtcdCluster(const TempDir& dir, int n,
              std::optional<EtcdTlsFiles> tls = std::nullopt)
      : tls_(std::move(tls)) {
    std::string initial;
    for (int i = 0; i < n; ++i) {
      Member m;
      m.name = "m" + std::to_string(i);
      m.client = "127.0.0.1:" + std::to_string(FreePort("127.0.0.1"));
      m.peer = "127.0.0.1:" + std::to_string(FreePort("127.0.0.1"));
      m.data = dir.path() + "/etcd-" + m.name;
      initial += (i ? "," : "") + m.name + "=http://" + m.peer;
      members_.push_back(std::move(m));
    }
    initial_ = initial;
    for (int i = 0; i < n; ++i) Start(i);
    for (int i = 0; i < n; ++i) WaitServing(i);
  }
  ~EtcdCluster() {
    for (Member& m : members_) {
      if (m.process) Kill(m);
    }
  }

  // "etcd://HOST:PORT,..." for the daemon's --store.
  std::string url() const {
    std::string out = "etcd://";
    for (size_t i = 0; i < members_.size(); ++i) {
      out += (i ? "," : "") + members_[i].client;
    }
    return out;
  }
  std::string endpoints() const { return url().substr(7); }
  Member& member(int i) { return members_[i]; }

  void Kill(int i) { Kill(members_[i]); }
  // Starts a killed member again on its data directory and ports.
  void Restart(int i) {
    Start(i);
    WaitServing(i);
  }
  bool serving(int i) const { return ready_[i]; }

  // Runs etcdctl (v3 API) against every member; its stdout.
  Result Ctl(std::vector<std::string> args) const {
    std::vector<std::string> argv = {kEtcdctl, "--endpoints", endpoints()};
    if (tls_) {
      argv.insert(argv.end(), {"--cacert", tls_->ca, "--cert",
                               tls_->client_cert, "--key", tls_->client_key});
    }
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, std::chrono::seconds(30), {"ETCDCTL_API=3"});
  }

 private:
  void Start(int i) {
    Member& m = members_[i];
    const std::string scheme = tls_ ? "https://" : "http://";
    std::vector<std::string> argv = {kEtcd,
                                     "--name",
                                     m.name,
                                     "--data-dir",
                                     m.data,
                                     "--listen-client-urls",
                                     scheme + m.client,
                                     "--advertise-client-urls",
                                     scheme + m.client,
                                     "--listen-peer-urls",
                                     "http://" + m.peer,
                                     "--initial-advertise-peer-urls",
                                     "http://" + m.peer,
                                     "--initial-cluster",
                                     initial_,
                                     "--initial-cluster-state",
                                     "new",
                                     "--initial-cluster-token",
                                     "hvd-test"};
    if (tls_) {
      argv.insert(argv.end(),
                  {"--cert-file", tls_->cert, "--key-file", tls_->key,
                   "--trusted-ca-file", tls_->ca, "--client-cert-auth"});
    }
    m.process = std::make_unique<Subprocess>(argv);
    ready_.resize(members_.size());
    ready_[i] = false;
  }
  void WaitServing(int i) {
    Member& m = members_[i];
    ready_[i] = !m.process
                     ->WaitForStderr("(ready to serve client requests)",
                                     std::chrono::seconds(60))
                     .empty();
  }
  void Kill(Member& m) {
    kill(m.process->pid(), SIGKILL);
    m.process->Wait(std::chrono::seconds(30));
    m.process.reset();
  }

  std::vector<Member> members_;
  std::vector<bool> ready_;
  std::string initial_;
  std::optional<EtcdTlsFiles> tls_;
};

}  // namespace hvd::testing
