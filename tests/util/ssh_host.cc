#include "tests/util/ssh_host.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace hvd::testing {

TempDir::TempDir() {
  char tmpl[] = "/tmp/hvd-ssh-test-XXXXXX";
  path_ = mkdtemp(tmpl);
  chmod(path_.c_str(), 0700);
}

TempDir::~TempDir() { std::filesystem::remove_all(path_); }

std::string TempDir::Write(const std::string& name, const std::string& content,
                           int mode) const {
  std::string p = path_ + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(p).parent_path());
  {
    std::ofstream f(p);
    f << content;
  }
  chmod(p.c_str(), mode);
  return p;
}

bool Shell(const std::string& cmd) {
  std::string ignored;
  return ShellCapture(cmd, &ignored);
}

bool ShellCapture(const std::string& cmd, std::string* output) {
  output->clear();
  FILE* p = popen(("(" + cmd + ") 2>&1").c_str(), "r");
  if (!p) {
    *output = "popen failed";
    return false;
  }
  char buf[512];
  size_t got;
  while ((got = fread(buf, 1, sizeof(buf), p)) > 0) output->append(buf, got);
  while (!output->empty() && output->back() == '\n') output->pop_back();
  return pclose(p) == 0;
}

int FreePort(const std::string& addr) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  inet_pton(AF_INET, addr.c_str(), &sa.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    close(fd);
    return 0;
  }
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  close(fd);
  return ntohs(sa.sin_port);
}

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

SshHost::SshHost(const TempDir& dir, const std::string& name,
                 const std::string& listen_addr, const std::string& netns)
    : addr_(listen_addr) {
  const std::string d = dir.path() + "/" + name;
  dir_ = d;
  std::filesystem::create_directories(d);
  std::filesystem::create_directories("/run/sshd");  // sshd's privsep dir
  if (!Shell("ssh-keygen -q -t ed25519 -N '' -f " + d + "/host_key") ||
      !Shell("ssh-keygen -q -t ed25519 -N '' -f " + d + "/user_key")) {
    error_ = "ssh-keygen failed";
    return;
  }
  user_key_ = d + "/user_key";
  host_pub_ = Slurp(d + "/host_key.pub");
  std::filesystem::copy_file(d + "/user_key.pub", d + "/authorized_keys");
  port_ = netns.empty() ? FreePort(listen_addr) : 22;
  std::ofstream cfg(d + "/sshd_config");
  cfg << "Port " << port_ << "\n"
      << "ListenAddress " << listen_addr << "\n"
      << "HostKey " << d << "/host_key\n"
      << "PidFile " << d << "/sshd.pid\n"
      << "AuthorizedKeysFile " << d << "/authorized_keys\n"
      << "PermitRootLogin prohibit-password\n"
      << "PasswordAuthentication no\n"
      << "KbdInteractiveAuthentication no\n"
      << "UsePAM no\n"
      << "StrictModes no\n"
      << "LogLevel ERROR\n";
  cfg.close();
  std::vector<std::string> argv;
  if (!netns.empty()) argv = {"/usr/sbin/ip", "netns", "exec", netns};
  for (const char* a : {"/usr/sbin/sshd", "-D", "-e", "-f"}) argv.push_back(a);
  argv.push_back(d + "/sshd_config");
  sshd_ = std::make_unique<Subprocess>(argv);
  // Ready once the port accepts connections.
  std::string probe = netns.empty() ? "" : "ip netns exec " + netns + " ";
  for (int i = 0; i < 200; ++i) {
    if (Shell(probe + "bash -c 'exec 3<>/dev/tcp/" + listen_addr + "/" +
              std::to_string(port_) + "'")) {
      ok_ = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  error_ = "sshd did not start: " + sshd_->StderrSoFar();
}

pid_t SshHost::pid() const { return sshd_ ? sshd_->pid() : -1; }

std::string WhyNoRootLogin() {
  if (geteuid() == 0) return "";
  return "the SSH tests log in as root@127.0.0.1 to an sshd of their own, "
         "which only root can start for that; run the suite as root";
}

std::vector<pid_t> Descendants(pid_t root) {
  std::map<pid_t, pid_t> parent;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = Slurp(e.path().string() + "/stat");
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state;
    pid_t ppid;
    rest >> state >> ppid;
    parent[std::stoi(name)] = ppid;
  }
  std::vector<pid_t> out;
  for (const auto& [pid, pp] : parent) {
    for (pid_t p = pp; p > 1; p = parent.count(p) ? parent[p] : 0) {
      if (p == root) {
        out.push_back(pid);
        break;
      }
    }
  }
  return out;
}

void SshHost::KillAll() {
  if (!sshd_) return;
  for (pid_t p : Descendants(sshd_->pid())) {
    std::string comm = Slurp("/proc/" + std::to_string(p) + "/comm");
    if (comm.rfind("sshd", 0) == 0) kill(p, SIGKILL);
  }
  kill(sshd_->pid(), SIGKILL);
}

SshHost::~SshHost() {
  if (!sshd_) return;
  KillAll();
  sshd_->Wait(std::chrono::seconds(10));
}

TestNetwork::TestNetwork(int hosts) : hosts_(hosts) {
  if (geteuid() != 0) {
    error_ = "network namespaces need root";
    return;
  }
  // The kernel frees a namespace only once its last process has gone, so
  // the veths of the previous test (or of a run that was killed) may still
  // stand for a moment after `ip netns del`: clear them, and try again
  // after a pause if the names are still taken.
  for (int attempt = 0; attempt < 5; ++attempt) {
    Remove();
    if (attempt > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200 * attempt));
    }
    if (Create()) {
      ok_ = true;
      return;
    }
  }
  Remove();
}

bool TestNetwork::Create() {
  const std::string bridge = "ip link add hvdtbr0 type bridge && ip addr add " +
                             bridge_address() +
                             "/24 dev hvdtbr0 && ip link set hvdtbr0 up";
  if (!ShellCapture(bridge, &error_)) {
    error_ = "cannot create a bridge (ip link add type bridge): " + error_;
    return false;
  }
  for (int i = 0; i < hosts_; ++i) {
    std::string n = ns(i), a = veth(i), b = n + "b";
    std::string why;
    if (!ShellCapture("ip netns add " + n + " && ip link add " + a +
                          " type veth peer name " + b + " && ip link set " + b +
                          " netns " + n + " && ip link set " + a +
                          " master hvdtbr0 && ip link set " + a +
                          " up && ip netns exec " + n + " ip addr add " +
                          address(i) + "/24 dev " + b + " && ip netns exec " +
                          n + " ip link set " + b + " up && ip netns exec " +
                          n + " ip link set lo up",
                      &why)) {
      error_ = "cannot create network namespace " + n + ": " + why;
      return false;
    }
  }
  return true;
}

// Deleting the host's end of a veth deletes both ends at once, whether or
// not its namespace still lingers.
void TestNetwork::Remove() {
  for (int i = 0; i < hosts_; ++i) {
    Shell("ip link del " + veth(i));
    Shell("ip netns del " + ns(i));
  }
  Shell("ip link del hvdtbr0");
}

TestNetwork::~TestNetwork() { Remove(); }

void SshHost::AcceptKeyOf(const SshHost& other) {
  std::filesystem::copy_file(other.user_key() + ".pub",
                             dir_ + "/authorized_keys",
                             std::filesystem::copy_options::overwrite_existing);
}

}  // namespace hvd::testing
