// The chaos harness's witness of durability: a client of hvd-rendezvousd
// that writes while the faults land, and checks afterwards that the
// daemon kept everything it answered.
//
//   hvd_store_probe write ADDRESS ADMIN_TOKEN_FILE LOG
//     creates a job of its own, then sets key k<i> to v<i>-<nonce> for
//     i = 0, 1, ... every few milliseconds until SIGTERM. LOG gets
//     "job ID TOKEN" first, then "ack I" for each set the daemon answered
//     OK and "seen I" for each read that showed the value (a daemon that
//     failed a set may still show it: then it must keep it too).
//   hvd_store_probe check ADDRESS LOG
//     reads back every key LOG says the daemon answered or showed; each
//     must hold its value. Prints one line; exits 1 when one is lost.
//
// Run against a daemon started again after a kill -9, "check" shows that
// no answer the daemon gave came from a state it had not made durable.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "rendezvous/client.h"

namespace {

using hvd::rendezvous::RendezvousClient;

std::atomic<bool> g_stop{false};

void OnTerm(int) { g_stop = true; }

std::string Value(int i, const std::string& nonce) {
  return "v" + std::to_string(i) + "-" + nonce;
}

std::string ReadToken(const std::string& path) {
  std::ifstream f(path);
  std::string token;
  f >> token;
  return token;
}

int Write(const std::string& address, const std::string& token_file,
          const std::string& log_path) {
  signal(SIGTERM, OnTerm);
  std::FILE* log = std::fopen(log_path.c_str(), "w");
  if (log == nullptr) {
    std::perror(log_path.c_str());
    return 2;
  }
  auto job = RendezvousClient::CreateJob(address, ReadToken(token_file),
                                         {{"probe", 1, 0}}, 1,
                                         std::chrono::seconds(60));
  if (!job.ok()) {
    std::fprintf(stderr, "hvd_store_probe: %s\n",
                 job.status().ToString().c_str());
    return 1;
  }
  const std::string nonce = std::to_string(std::random_device{}());
  std::fprintf(log, "job %s %s %s\n", job->job_id.c_str(), job->token.c_str(),
               nonce.c_str());
  std::fflush(log);
  auto client = RendezvousClient::Create(address, job->job_id, job->token);
  client->set_call_timeout(std::chrono::seconds(5));
  auto last_alive = std::chrono::steady_clock::now();
  for (int i = 0; !g_stop; ++i) {
    const std::string key = "k" + std::to_string(i);
    const std::string value = Value(i, nonce);
    if (client->Set(key, value).ok()) {
      std::fprintf(log, "ack %d\n", i);
    }
    auto got = client->Get(key);
    if (got.ok() && *got == value) std::fprintf(log, "seen %d\n", i);
    std::fflush(log);
    if (std::chrono::steady_clock::now() - last_alive >
        std::chrono::seconds(2)) {
      (void)client->KeepAlive();
      last_alive = std::chrono::steady_clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::fclose(log);
  return 0;
}

int Check(const std::string& address, const std::string& log_path) {
  std::ifstream log(log_path);
  std::string word, job_id, token, nonce;
  if (!(log >> word >> job_id >> token >> nonce) || word != "job") {
    std::printf("probe: no job was made (nothing to check)\n");
    return 0;
  }
  std::set<int> kept;
  for (int i; log >> word >> i;) kept.insert(i);
  auto client = RendezvousClient::Create(address, job_id, token);
  client->set_call_timeout(std::chrono::seconds(30));
  for (int i : kept) {
    auto got = client->Get("k" + std::to_string(i));
    if (!got.ok() || *got != Value(i, nonce)) {
      std::printf("probe: LOST k%d, answered before the restart: %s\n", i,
                  got.ok() ? ("now '" + *got + "'").c_str()
                           : got.status().ToString().c_str());
      return 1;
    }
  }
  std::printf("probe: %zu answered keys all kept\n", kept.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "write" && argc == 5) return Write(argv[2], argv[3], argv[4]);
  if (mode == "check" && argc == 4) return Check(argv[2], argv[3]);
  std::fprintf(stderr,
               "usage: hvd_store_probe write ADDRESS ADMIN_TOKEN_FILE LOG | "
               "check ADDRESS LOG\n");
  return 2;
}
