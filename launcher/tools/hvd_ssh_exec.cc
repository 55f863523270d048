// hvd-ssh-exec: runs one worker on a remote host, for the supervisor.
//
// horovodrun starts it like a local worker (own process group, killed if
// the launcher dies), with the worker's environment as its own. It opens an
// SSH session, starts hvd-remote-exec there, sends it the working
// directory, environment and argv through the encrypted channel, relays
// the remote stdout and stderr, and exits with the worker's status.
// SIGTERM/SIGINT/SIGHUP are forwarded as TERM; if this process dies, the
// connection closes and the remote wrapper kills the worker's group.
//
//   hvd-ssh-exec --host H [--port P] [--user U] [--identity F]
//                [--policy strict|accept-new|off] [--timeout S]
//                [--share KEY] --wrapper PATH -- command [args...]
//
// With --share KEY the workers given the same KEY share one connection
// (shared_connection.h).
//
// With --command TEMPLATE (horovodrun --launcher-cmd) it reaches the host
// through that command instead of SSH ({host} replaced, the wrapper's path
// appended), writing the same launch to the command's stdin; its output
// passes straight through.
#include <fcntl.h>
#include <libssh/libssh.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/parse.h"
#include "launcher/remote_protocol.h"
#include "launcher/ssh.h"
#include "launcher/tools/channel_io.h"
#include "launcher/tools/shared_connection.h"

extern char** environ;

namespace {

using hvd::launcher::ChannelWriteAll;
using hvd::launcher::HostKeyCheck;
using hvd::launcher::WriteAll;

int g_signal_pipe[2];

void OnSignal(int) {
  int saved = errno;
  (void)!write(g_signal_pipe[1], "s", 1);
  errno = saved;
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "hvd-ssh-exec: %s\n", what.c_str());
  return 255;
}

// Copies whatever the stream has ready; false when the connection broke.
bool Relay(ssh_channel ch, int is_stderr, bool* eof) {
  char buf[32768];
  for (;;) {
    int avail = ssh_channel_poll(ch, is_stderr);
    if (avail == SSH_ERROR) return false;
    if (avail == SSH_EOF) {
      *eof = true;
      return true;
    }
    if (avail == 0) return true;
    int n = ssh_channel_read_nonblocking(
        ch, buf, std::min<int>(avail, sizeof(buf)), is_stderr);
    if (n == SSH_ERROR) return false;
    if (n <= 0) return true;
    (void)WriteAll(is_stderr ? STDERR_FILENO : STDOUT_FILENO,
                   std::string_view(buf, n));
  }
}

// --command: the wrapper started through the user's command, which must
// pass stdin through; EOF of that stdin (this process died) ends the
// worker, as a closed SSH channel does.
int RunThroughCommand(const std::string& templ, const std::string& host,
                      const std::string& wrapper,
                      const hvd::launcher::RemoteLaunch& launch) {
  auto words = hvd::SplitWords(templ, "--launcher-cmd");
  if (!words.ok()) return Fail(words.status().message());
  std::vector<std::string> argv;
  for (std::string w : *words) {
    for (size_t at; (at = w.find("{host}")) != std::string::npos;) {
      w.replace(at, 6, host);
    }
    argv.push_back(w);
  }
  argv.push_back(wrapper);
  int in[2];
  if (pipe2(in, O_CLOEXEC) != 0) return Fail("pipe");
  pid_t pid = fork();
  if (pid < 0) return Fail(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // A group of its own: the launcher's signals to this process's group
    // must not reach the wrapper directly (it hears TERM on its stdin and
    // ends the worker itself).
    setpgid(0, 0);
    dup2(in[0], STDIN_FILENO);
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "hvd-ssh-exec: cannot run %s: %s\n", args[0],
                 std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  close(in[0]);
  const std::string header = hvd::launcher::EncodeRemoteLaunch(launch);
  if (!WriteAll(in[1], header)) {
    return Fail("host " + host + ": '" + templ +
                "' did not take the worker's launch on its stdin");
  }
  int status = 0;
  for (;;) {
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) break;
    char sig[16];
    if (read(g_signal_pipe[0], sig, sizeof(sig)) > 0) {
      (void)WriteAll(in[1], "TERM\n");
    }
    pollfd p{g_signal_pipe[0], POLLIN, 0};
    poll(&p, 1, 100);
  }
  close(in[1]);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  hvd::launcher::SshTarget target;
  std::string wrapper, via, share;
  std::vector<std::string> command;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      command.assign(argv + i + 1, argv + argc);
      break;
    }
    if (i + 1 >= argc) return Fail(a + " needs a value");
    std::string v = argv[++i];
    if (a == "--host") {
      target.host = v;
    } else if (a == "--port") {
      auto p = hvd::ParseInt64(v, "--port", 1, 65535);
      if (!p.ok()) return Fail(p.status().message());
      target.port = static_cast<int>(*p);
    } else if (a == "--user") {
      target.user = v;
    } else if (a == "--identity") {
      target.identity_file = v;
    } else if (a == "--policy") {
      target.policy = v == "strict" ? HostKeyCheck::kStrict
                      : v == "off"  ? HostKeyCheck::kOff
                                    : HostKeyCheck::kAcceptNew;
    } else if (a == "--timeout") {
      auto t = hvd::ParseInt64(v, "--timeout", 1, 86400);
      if (!t.ok()) return Fail(t.status().message());
      target.timeout = std::chrono::seconds(*t);
    } else if (a == "--wrapper") {
      wrapper = v;
    } else if (a == "--command") {
      via = v;
    } else if (a == "--share") {
      share = v;
    } else {
      return Fail("unknown option " + a);
    }
  }
  if (target.host.empty() || wrapper.empty() || command.empty()) {
    return Fail("usage: hvd-ssh-exec --host H --wrapper PATH -- command...");
  }

  if (pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return Fail("pipe");
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  hvd::launcher::RemoteLaunch launch;
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) != nullptr) launch.cwd = cwd;
  for (char** e = environ; *e != nullptr; ++e) launch.env.emplace_back(*e);
  launch.argv = command;
  if (!via.empty()) return RunThroughCommand(via, target.host, wrapper, launch);
  if (!share.empty()) {
    return hvd::launcher::RunShared(target, wrapper, launch, share,
                                    g_signal_pipe[0]);
  }

  auto session = hvd::launcher::SshSession::Connect(target);
  if (!session.ok()) return Fail(session.status().message());
  ssh_session s = static_cast<ssh_session>((*session)->raw());
  const std::string who = "host " + hvd::launcher::DescribeTarget(target);

  ssh_channel ch = ssh_channel_new(s);
  if (ch == nullptr || ssh_channel_open_session(ch) != SSH_OK) {
    return Fail(who + ": cannot open a session channel: " + ssh_get_error(s));
  }
  // Only the wrapper's path is on the remote command line; everything else
  // goes through the channel.
  std::string remote = "exec " + hvd::launcher::ShellQuote(wrapper);
  if (ssh_channel_request_exec(ch, remote.c_str()) != SSH_OK) {
    return Fail(who + ": cannot start " + wrapper + ": " + ssh_get_error(s));
  }
  if (!ChannelWriteAll(ch, hvd::launcher::EncodeRemoteLaunch(launch))) {
    return Fail(who + ": the connection broke while starting the worker");
  }

  bool out_eof = false, err_eof = false;
  while (!(out_eof && err_eof)) {
    char sig[16];
    if (read(g_signal_pipe[0], sig, sizeof(sig)) > 0) {
      (void)ChannelWriteAll(ch, "TERM\n");
    }
    int ready = ssh_channel_poll_timeout(ch, 100, 0);
    if (ready == SSH_ERROR) {
      return Fail(who + ": connection lost (" + ssh_get_error(s) + ")");
    }
    if (!Relay(ch, 0, &out_eof) || !Relay(ch, 1, &err_eof)) {
      return Fail(who + ": connection lost (" + ssh_get_error(s) + ")");
    }
    if (ssh_channel_is_closed(ch)) break;
  }
  int status = ssh_channel_get_exit_status(ch);
  ssh_channel_send_eof(ch);
  ssh_channel_close(ch);
  ssh_channel_free(ch);
  if (status < 0) {
    return Fail(who +
                ": the remote worker ended without an exit status "
                "(connection lost?)");
  }
  return status;
}
