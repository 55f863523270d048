// hvd_test_slurm: a throwaway Slurm (tests/util/slurm_cluster.h) for the
// benchmarks. Prints "SLURM_CONF=PATH" once its nodes are idle, then
// keeps it up until stdin closes or a signal comes, and removes it.
//   hvd_test_slurm NODES CPUS
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "tests/util/slurm_cluster.h"

namespace {
volatile sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: hvd_test_slurm NODES CPUS\n");
    return 2;
  }
  const int nodes = std::atoi(argv[1]), cpus = std::atoi(argv[2]);
  if (nodes < 1 || cpus < 1) {
    std::fprintf(stderr, "hvd_test_slurm: NODES and CPUS must be >= 1\n");
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  hvd::testing::TempDir dir;
  hvd::testing::SlurmCluster cluster(dir, nodes, cpus);
  if (!cluster.ok()) {
    std::fprintf(stderr, "hvd_test_slurm: %s\n", cluster.error().c_str());
    return 1;
  }
  std::printf("%s\n", cluster.env()[0].c_str());
  std::fflush(stdout);
  char c;
  while (!g_stop && read(STDIN_FILENO, &c, 1) > 0) {
  }
  return 0;
}
