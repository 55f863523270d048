// hvd-rendezvousd: the rendezvous as a long-running, systemd-managed service.
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/files.h"
#include "common/logging.h"
#include "common/metrics_http.h"
#include "rendezvous/daemon_config.h"
#include "rendezvous/jobs_page.h"
#include "rendezvous/sd_notify.h"
#include "rendezvous/server.h"
#include "rendezvous/store/disk_journal.h"
#include "rendezvous/store/etcd_journal.h"

namespace hvd::rendezvous {
namespace {

int Fail(const Status& s) {
  std::fprintf(stderr, "hvd-rendezvousd: %s\n", s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

StatusOr<std::string> ReadOptional(const std::string& path) {
  if (path.empty()) return std::string();
  return ReadWholeFile(path);
}

// Restores the table from --state-dir and journals its changes there.
StatusOr<std::unique_ptr<store::DiskJournal>> OpenState(
    const DaemonConfig& config, JobTable& table) {
  store::DiskJournalOptions o;
  o.dir = config.state_dir;
  o.discard_damaged = config.discard_damaged_state;
  store::Recovered recovered;
  HVD_ASSIGN_OR_RETURN(std::unique_ptr<store::DiskJournal> journal,
                       store::DiskJournal::Open(o, &recovered));
  for (const std::string& note : recovered.notes) {
    HVD_LOG(Warning) << note;
  }
  for (const TableRecord& r : recovered.records) {
    Status s = table.Restore(r);
    if (!s.ok()) {
      return Status::DataLoss(
          config.state_dir,
          s.message() +
              "; the state does not hold together: start with "
              "--discard-damaged-state to keep it aside and "
              "begin empty");
    }
  }
  if (!recovered.records.empty()) {
    HVD_LOG(Info) << "restored " << table.JobCount() << " job(s) from "
                  << config.state_dir;
  }
  table.SetJournal(journal.get());
  return journal;
}

// Whether the daemon an etcd owner key names ("host=H pid=P ...") ran on
// this host and its process is gone: a daemon killed and started again
// takes its jobs back at once, not when the dead one's lease runs out.
bool OwnerGoneHere(const std::string& owner, const std::string& me) {
  char host[256] = {};
  long pid = 0;
  if (std::sscanf(owner.c_str(), "host=%255s pid=%ld", host, &pid) != 2 ||
      pid <= 0) {
    return false;
  }
  return me == host && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// Restores the table from etcd (standing by while another daemon serves
// the prefix) and journals its changes there.
StatusOr<std::unique_ptr<store::EtcdJournal>> OpenEtcd(
    const DaemonConfig& config, const sigset_t& stop, JobTable& table,
    std::function<void(const Status&)> lost) {
  store::EtcdOptions e;
  HVD_ASSIGN_OR_RETURN(e.endpoints, store::ParseEtcdUrl(config.store));
  HVD_ASSIGN_OR_RETURN(e.ca_pem, ReadOptional(config.etcd_ca));
  HVD_ASSIGN_OR_RETURN(e.cert_pem, ReadOptional(config.etcd_cert));
  if (!config.etcd_key.empty()) {
    HVD_ASSIGN_OR_RETURN(e.key_pem,
                         ReadSecretFile(config.etcd_key, "--etcd-key"));
  }
  e.user = config.etcd_user;
  if (!config.etcd_password_file.empty()) {
    HVD_ASSIGN_OR_RETURN(e.password, ReadSecretFile(config.etcd_password_file,
                                                    "--etcd-password-file"));
  }
  HVD_ASSIGN_OR_RETURN(std::unique_ptr<store::EtcdClient> client,
                       store::EtcdClient::Connect(e));
  store::EtcdJournalOptions o;
  o.prefix = config.etcd_prefix;
  o.lease_seconds = config.etcd_lease_seconds;
  o.discard_damaged = config.discard_damaged_state;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  o.name = "host=" + std::string(host) + " pid=" + std::to_string(getpid()) +
           " listen=" + config.listen;
  store::EtcdJournalHooks hooks;
  hooks.waiting = [](const std::string& what) { HVD_LOG(Warning) << what; };
  hooks.stop_waiting = [stop] {
    sigset_t pending;
    sigpending(&pending);
    for (int sig : {SIGTERM, SIGINT}) {
      if (sigismember(&pending, sig) && sigismember(&stop, sig)) return true;
    }
    return false;
  };
  hooks.owner_gone = [me = std::string(host)](const std::string& owner) {
    return OwnerGoneHere(owner, me);
  };
  hooks.lost = std::move(lost);
  store::Recovered recovered;
  HVD_ASSIGN_OR_RETURN(std::unique_ptr<store::EtcdJournal> journal,
                       store::EtcdJournal::Open(std::move(client), o,
                                                std::move(hooks), &recovered));
  for (const std::string& note : recovered.notes) HVD_LOG(Warning) << note;
  for (const TableRecord& r : recovered.records) {
    Status s = table.Restore(r);
    if (!s.ok()) {
      return Status::DataLoss(
          config.store + " " + config.etcd_prefix,
          s.message() + "; the jobs in etcd do not hold together");
    }
  }
  HVD_LOG(Info) << "serving " << table.JobCount() << " job(s) from "
                << config.store << " under " << config.etcd_prefix;
  table.SetJournal(journal.get());
  return journal;
}

// Set once the etcd store gives the jobs up; the daemon then exits 1.
std::atomic<bool> store_lost{false};

// Past the grace, the parts still closing (the store's last writes, the
// metrics server) get this long before the process ends regardless.
constexpr std::chrono::seconds kCloseMargin{5};

// Whatever is in flight, a stopped daemon is gone within its grace and the
// margin: an operator's stop, or systemd's, never hangs on a stuck call or
// store. What was not yet durable was not answered either, so nothing a
// client was told is lost by ending here.
void BoundTheShutdown(int grace_seconds) {
  std::thread([grace_seconds] {
    std::this_thread::sleep_for(std::chrono::seconds(grace_seconds) +
                                kCloseMargin);
    static const char kLine[] =
        "hvd-rendezvousd: still shutting down past its grace and margin; "
        "exiting now\n";
    (void)!write(STDERR_FILENO, kLine, sizeof(kLine) - 1);
    _exit(1);
  }).detach();
}

int Main(int argc, char** argv) {
  // Block the stop signals before any thread exists, so every gRPC thread
  // inherits the mask and only sigwait below sees them.
  sigset_t stop;
  sigemptyset(&stop);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop, sig);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::vector<std::string> args(argv + 1, argv + argc);
  auto config = ParseDaemonConfig(args, ReadWholeFile);
  if (!config.ok()) return Fail(config.status());
  if (config->show_help) {
    std::fputs(DaemonHelpText().c_str(), stdout);
    return 0;
  }
  if (config->show_version) {
    std::puts("hvd-rendezvousd (hvd) 0.1.0");
    return 0;
  }
  SetLogLevel(config->log_level);
  SetLogPrefix("hvd-rendezvousd");

  ServerOptions options;
  options.listen = config->listen;
  options.limits = config->limits;
  auto token = ReadSecretFile(config->admin_token_file, "--admin-token-file");
  if (!token.ok()) return Fail(token.status());
  options.admin_token = *token;
  auto cert = ReadOptional(config->tls_cert);
  auto key = config->tls_key.empty()
                 ? StatusOr<std::string>(std::string())
                 : ReadSecretFile(config->tls_key, "--tls-key");
  auto ca = ReadOptional(config->tls_client_ca);
  for (const Status& s : {cert.status(), key.status(), ca.status()}) {
    if (!s.ok()) return Fail(s);
  }
  options.tls = ServerTls{*cert, *key, *ca};

  // The table, rebuilt from the state directory before the first call.
  // Under systemd, StateDirectory= names it when no flag does.
  if (config->state_dir.empty() && config->store.empty()) {
    if (const char* dirs = std::getenv("STATE_DIRECTORY"); dirs && *dirs) {
      config->state_dir =
          std::string(dirs).substr(0, std::string(dirs).find(':'));
    }
  }
  options.table = std::make_shared<JobTable>(config->limits);
  std::unique_ptr<store::DiskJournal> journal;
  std::unique_ptr<store::EtcdJournal> etcd;
  if (!config->store.empty()) {
    auto opened = OpenEtcd(*config, stop, *options.table, [](const Status& s) {
      HVD_LOG(Error) << s.message() << "; stopping";
      store_lost = true;
      kill(getpid(), SIGTERM);
    });
    if (!opened.ok() && opened.status().code() == StatusCode::kCancelled) {
      return 0;  // stopped while standing by
    }
    if (!opened.ok()) return Fail(opened.status());
    etcd = std::move(*opened);
  } else if (config->state_dir.empty()) {
    HVD_LOG(Info) << "no --state-dir: jobs live in memory only, and a "
                     "restart ends them";
  } else {
    auto opened = OpenState(*config, *options.table);
    if (!opened.ok()) return Fail(opened.status());
    journal = std::move(*opened);
  }

  auto server = RendezvousServer::Start(options);
  if (!server.ok()) return Fail(server.status());
  std::fprintf(
      stderr, "hvd-rendezvousd: listening on %s%s\n",
      (*server)->address().c_str(),
      options.tls.cert_pem.empty()
          ? " (plaintext)"
          : (options.tls.client_ca_pem.empty() ? " (TLS)" : " (mutual TLS)"));
  std::fflush(stderr);
  std::unique_ptr<metrics::HttpServer> metrics;
  if (config->metrics_port > 0) {
    RendezvousServer* raw = server->get();
    const std::string store =
        !config->store.empty()
            ? "etcd " + config->store + " under " + config->etcd_prefix
        : !config->state_dir.empty() ? "state directory " + config->state_dir
                                     : "memory only";
    std::map<std::string, metrics::HttpServer::Page> pages;
    pages["/metrics"] = {"text/plain; version=0.0.4; charset=utf-8",
                         [raw] { return raw->MetricsExposition(); }};
    // The page of the jobs (jobs_page.h): its data behind the admin token.
    pages["/"] = {"text/html; charset=utf-8", [] { return JobsPageHtml(); }};
    pages["/api/jobs"].type = "application/json";
    pages["/api/jobs"].answer = [raw, store, admin = options.admin_token](
                                    const metrics::HttpServer::Request& req) {
      if (!IsAdmin(req.authorization, admin)) {
        return metrics::HttpServer::Reply{
            403, "present the admin token: Authorization: Bearer TOKEN\n"};
      }
      return metrics::HttpServer::Reply{
          200,
          JobsJson(raw->table().Summaries(), store, raw->table().LastWrite())};
    };
    auto m = metrics::HttpServer::Start(config->metrics_port, std::move(pages),
                                        "--metrics-port");
    if (!m.ok()) return Fail(m.status());
    metrics = std::move(*m);
  }
  if (Status s =
          SdNotify("READY=1\nSTATUS=listening on " + (*server)->address());
      !s.ok()) {
    HVD_LOG(Warning) << s.ToString();
  }

  for (;;) {
    int sig = 0;
    sigwait(&stop, &sig);
    if (sig == SIGHUP) {
      HVD_LOG(Warning) << "SIGHUP ignored: restart the service to reload";
      continue;
    }
    const char* name = sigabbrev_np(sig);
    std::fprintf(stderr, "hvd-rendezvousd: SIG%s: shutting down\n",
                 name ? name : "?");
    (void)SdNotify("STOPPING=1");
    BoundTheShutdown(config->shutdown_grace_seconds);
    // Unavailable: the clients wait for the daemon that comes back.
    (*server)->Shutdown(
        Status::Unavailable(
            std::string("the rendezvous daemon is shutting down (SIG") +
            (name ? name : "?") + ")"),
        std::chrono::seconds(config->shutdown_grace_seconds));
    return store_lost ? 1 : 0;
  }
}

}  // namespace
}  // namespace hvd::rendezvous

int main(int argc, char** argv) { return hvd::rendezvous::Main(argc, argv); }
