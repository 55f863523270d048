#include "rendezvous/daemon_config.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>

#include "common/files.h"
#include "rendezvous/sd_notify.h"
#include "rendezvous/store/etcd_client.h"

namespace hvd::rendezvous {
namespace {

StatusOr<DaemonConfig> Parse(std::vector<std::string> args,
                             std::map<std::string, std::string> files = {}) {
  return ParseDaemonConfig(
      args, [&](const std::string& path) -> StatusOr<std::string> {
        auto it = files.find(path);
        if (it == files.end()) return Status::NotFound(path, "no such file");
        return it->second;
      });
}

TEST(DaemonConfigTest, FlagsAndDefaults) {
  auto c = Parse({"--admin-token-file", "/t", "--listen", "0.0.0.0:0",
                  "--max-jobs=5", "--log-level", "info"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->listen, "0.0.0.0:0");
  EXPECT_EQ(c->admin_token_file, "/t");
  EXPECT_EQ(c->limits.max_jobs, 5u);
  EXPECT_EQ(c->log_level, LogLevel::kInfo);
  EXPECT_EQ(c->limits.job_ttl_seconds, 30);
  EXPECT_EQ(c->shutdown_grace_seconds, 5);
}

TEST(DaemonConfigTest, StateDirectoryAndTheSwitchToDiscardDamage) {
  auto none = Parse({"--admin-token-file", "/t"});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->state_dir.empty());
  EXPECT_FALSE(none->discard_damaged_state);
  // The switch takes no value on the command line.
  auto c = Parse({"--state-dir", "/var/lib/x", "--discard-damaged-state",
                  "--admin-token-file", "/t"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->state_dir, "/var/lib/x");
  EXPECT_TRUE(c->discard_damaged_state);
  auto file = Parse({"--config", "/c", "--admin-token-file", "/t"},
                    {{"/c", "state_dir: /s\ndiscard-damaged-state: false\n"}});
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ(file->state_dir, "/s");
  EXPECT_FALSE(file->discard_damaged_state);
  auto bad = Parse({"--config", "/c", "--admin-token-file", "/t"},
                   {{"/c", "discard-damaged-state: sometimes\n"}});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("true or false"), std::string::npos);
}

TEST(DaemonConfigTest, EtcdStoreWithItsTlsAndAuth) {
  auto c = Parse({"--admin-token-file", "/t", "--store",
                  "etcd://10.0.0.1:2379,[::1]:2379", "--etcd-prefix", "/jobs/",
                  "--etcd-ca", "/ca", "--etcd-cert", "/c", "--etcd-key", "/k",
                  "--etcd-user", "hvd", "--etcd-password-file", "/p",
                  "--etcd-lease-seconds", "5"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->store, "etcd://10.0.0.1:2379,[::1]:2379");
  EXPECT_EQ(c->etcd_prefix, "/jobs/");
  EXPECT_EQ(c->etcd_ca, "/ca");
  EXPECT_EQ(c->etcd_user, "hvd");
  EXPECT_EQ(c->etcd_lease_seconds, 5);
  auto endpoints = store::ParseEtcdUrl(c->store);
  ASSERT_TRUE(endpoints.ok()) << endpoints.status().ToString();
  EXPECT_EQ(*endpoints,
            (std::vector<std::string>{"10.0.0.1:2379", "[::1]:2379"}));
  auto none = Parse({"--admin-token-file", "/t"});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->store.empty());
  EXPECT_EQ(none->etcd_prefix, "/hvd-rendezvous/");
}

TEST(DaemonConfigTest, YamlWithSameKeysAndFlagsWin) {
  std::string yaml =
      "listen: 127.0.0.1:7000\n"
      "admin_token_file: /etc/hvd/token\n"
      "max-keys-per-job: 10\n"
      "job-ttl-seconds: 0\n"
      "tls-cert: /c\n"
      "tls-key: /k\n";
  auto c = Parse({"--config", "/cfg.yaml", "--listen", "127.0.0.1:8000"},
                 {{"/cfg.yaml", yaml}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->listen, "127.0.0.1:8000");
  EXPECT_EQ(c->admin_token_file, "/etc/hvd/token");
  EXPECT_EQ(c->limits.max_keys_per_job, 10u);
  EXPECT_EQ(c->limits.job_ttl_seconds, 0);
  EXPECT_EQ(c->tls_cert, "/c");
}

TEST(DaemonConfigTest, ErrorsNameTheSetting) {
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> files;
    const char* says;
  } cases[] = {
      {{}, {}, "--admin-token-file: is required"},
      {{"--admin-token-file", "/t", "--bogus", "1"},
       {},
       "--bogus: unknown option"},
      {{"--admin-token-file", "/t", "--max-jobs", "zero"}, {}, "--max-jobs"},
      {{"--admin-token-file", "/t", "--log-level", "loud"}, {}, "--log-level"},
      {{"--admin-token-file", "/t", "--tls-cert", "/c"}, {}, "give both"},
      {{"--admin-token-file", "/t", "--tls-client-ca", "/ca"},
       {},
       "mutual TLS"},
      {{"--config", "/c.yaml"},
       {{"/c.yaml", "colour: blue\n"}},
       "/c.yaml: colour: unknown setting"},
      {{"--config", "/c.yaml"},
       {{"/c.yaml", "listen: [a\n"}},
       "not valid YAML"},
      {{"--config", "/c.yaml"},
       {{"/c.yaml", "max-jobs: {a: 1}\n"}},
       "must be a scalar"},
      // A key that is a list threw out of the parser (as fuzzing found in
      // horovodrun's).
      {{"--config", "/c.yaml"},
       {{"/c.yaml", "[listen, x]: 1\n"}},
       "/c.yaml: has a key that is not a name"},
      {{"--config", "/c.yaml"},
       {{"/c.yaml", "admin-token-file: /t\nmax-jobs: -1\n"}},
       "/c.yaml: max-jobs"},
      {{"--config", "/missing.yaml"}, {}, "/missing.yaml"},
      {{"--admin-token-file"}, {}, "needs a value"},
      {{"--admin-token-file", "/t", "--store", "redis://h:1"},
       {},
       "--store: 'redis://h:1' is not a store; use etcd://"},
      {{"--admin-token-file", "/t", "--store", "etcd://h:1", "--state-dir",
        "/s"},
       {},
       "give one of them"},
      {{"--admin-token-file", "/t", "--etcd-ca", "/ca"},
       {},
       "only mean something with --store etcd://"},
      {{"--admin-token-file", "/t", "--store", "etcd://h:1", "--etcd-cert",
        "/c", "--etcd-key", "/k"},
       {},
       "needs --etcd-ca"},
      {{"--admin-token-file", "/t", "--store", "etcd://h:1", "--etcd-user",
        "u"},
       {},
       "--etcd-user/--etcd-password-file: give both"},
      {{"--admin-token-file", "/t", "--etcd-prefix", "/x"},
       {},
       "--etcd-prefix: must end with '/'"},
  };
  for (const Case& c : cases) {
    auto r = Parse(c.args, c.files);
    ASSERT_FALSE(r.ok()) << c.says;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos)
        << r.status().message();
  }
}

TEST(DaemonConfigTest, EtcdUrlErrorsSayWhatToWrite) {
  for (const char* url : {"etcd://", "etcd://h", "etcd://h:1,", "etc://h:1"}) {
    auto r = store::ParseEtcdUrl(url);
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << url;
    EXPECT_NE(r.status().message().find("--store"), std::string::npos)
        << r.status().message();
  }
}

class TempFile {
 public:
  TempFile(const std::string& content, mode_t mode) {
    char tmpl[] = "/tmp/hvd-secret-XXXXXX";
    int fd = mkstemp(tmpl);
    path_ = tmpl;
    (void)!write(fd, content.data(), content.size());
    close(fd);
    chmod(path_.c_str(), mode);
  }
  ~TempFile() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ReadSecretFileTest, PrivateFileIsReadAndTrimmed) {
  TempFile f("  s3cret\n", 0600);
  auto t = ReadSecretFile(f.path(), "--admin-token-file");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(*t, "s3cret");
}

TEST(ReadSecretFileTest, GroupOrOthersReadableIsRefused) {
  for (mode_t mode : {0640, 0604, 0660}) {
    TempFile f("s3cret", mode);
    auto t = ReadSecretFile(f.path(), "--admin-token-file");
    ASSERT_FALSE(t.ok()) << mode;
    EXPECT_EQ(t.status().code(), StatusCode::kPermissionDenied);
    EXPECT_NE(t.status().message().find("chmod 600"), std::string::npos);
  }
}

TEST(ReadSecretFileTest, MissingOrEmpty) {
  EXPECT_EQ(ReadSecretFile("/nonexistent/hvd", "x").status().code(),
            StatusCode::kNotFound);
  TempFile f("\n", 0600);
  EXPECT_EQ(ReadSecretFile(f.path(), "x").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(SdNotifyTest, SendsOneDatagramToNotifySocket) {
  std::string path = "/tmp/hvd-notify-" + std::to_string(getpid());
  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  unlink(path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  setenv("NOTIFY_SOCKET", path.c_str(), 1);
  ASSERT_TRUE(SdNotify("READY=1").ok());
  char buf[64] = {0};
  ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "READY=1");
  unsetenv("NOTIFY_SOCKET");
  EXPECT_TRUE(SdNotify("READY=1").ok());  // outside systemd: nothing to do
  close(fd);
  unlink(path.c_str());
}

TEST(SdNotifyTest, AbstractSocket) {
  std::string name = "hvd-notify-abstract-" + std::to_string(getpid());
  int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  socklen_t len = offsetof(sockaddr_un, sun_path) + 1 + name.size();
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  setenv("NOTIFY_SOCKET", ("@" + name).c_str(), 1);
  ASSERT_TRUE(SdNotify("STOPPING=1").ok());
  char buf[64] = {0};
  ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
  EXPECT_EQ(std::string(buf, n > 0 ? n : 0), "STOPPING=1");
  unsetenv("NOTIFY_SOCKET");
  close(fd);
}

}  // namespace
}  // namespace hvd::rendezvous
