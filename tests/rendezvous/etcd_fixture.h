// Real etcd members for tests (Debian's etcd-server): each on 127.0.0.1
// ports of its own with a data directory in the test's TempDir, one
// member or a cluster of several, started and ended by the test by pid.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <memory>
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

class EtcdCluster {
 public:
  struct Member {
    std::string name, client, peer, data;
    std::unique_ptr<Subprocess> process;
  };

  // Starts `n` members and waits until each serves clients.
  EtcdCluster(const TempDir& dir, int n) {
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
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, std::chrono::seconds(30), {"ETCDCTL_API=3"});
  }

 private:
  void Start(int i) {
    Member& m = members_[i];
    m.process = std::make_unique<Subprocess>(std::vector<std::string>{
        kEtcd, "--name", m.name, "--data-dir", m.data, "--listen-client-urls",
        "http://" + m.client, "--advertise-client-urls", "http://" + m.client,
        "--listen-peer-urls", "http://" + m.peer,
        "--initial-advertise-peer-urls", "http://" + m.peer,
        "--initial-cluster", initial_, "--initial-cluster-state", "new",
        "--initial-cluster-token", "hvd-test"});
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
};

}  // namespace hvd::testing
