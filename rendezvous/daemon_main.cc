// hvd-rendezvousd: the rendezvous as a long-running, systemd-managed service.
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/files.h"
#include "common/logging.h"
#include "common/metrics_http.h"
#include "rendezvous/daemon_config.h"
#include "rendezvous/sd_notify.h"
#include "rendezvous/server.h"
#include "rendezvous/store/disk_journal.h"

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
  if (config->state_dir.empty()) {
    if (const char* dirs = std::getenv("STATE_DIRECTORY"); dirs && *dirs) {
      config->state_dir =
          std::string(dirs).substr(0, std::string(dirs).find(':'));
    }
  }
  options.table = std::make_shared<JobTable>(config->limits);
  std::unique_ptr<store::DiskJournal> journal;
  if (config->state_dir.empty()) {
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
    auto m = metrics::HttpServer::Start(
        config->metrics_port, [raw] { return raw->MetricsExposition(); });
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
    // Unavailable: the clients wait for the daemon that comes back.
    (*server)->Shutdown(
        Status::Unavailable(
            std::string("the rendezvous daemon is shutting down (SIG") +
            (name ? name : "?") + ")"),
        std::chrono::seconds(config->shutdown_grace_seconds));
    return 0;
  }
}

}  // namespace
}  // namespace hvd::rendezvous

int main(int argc, char** argv) { return hvd::rendezvous::Main(argc, argv); }
