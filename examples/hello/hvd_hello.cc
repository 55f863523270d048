// The smallest hvd program: every rank allreduces rank + 1 and checks the
// sum is size * (size + 1) / 2.
//
//   horovodrun -np 3 hvd_hello [--rounds N] [--late-rank R [--late-ms MS]]
//
// --rounds N repeats init, allreduce, shutdown N times in this one process
// (each round joins a new generation of the job); --late-rank makes rank R
// start every round after the first MS milliseconds (default 300) after
// the others, which then wait for it.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "hvd/hvd.h"

namespace {

struct Options {
  int rounds = 1;
  int late_rank = -1;
  int late_ms = 300;
};

// A whole non-negative number, or -1.
int ParseCount(const char* s) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (!*s || *end || v < 0 || v > 1000000) return -1;
  return static_cast<int>(v);
}

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    int* target = a == "--rounds"      ? &o->rounds
                  : a == "--late-rank" ? &o->late_rank
                  : a == "--late-ms"   ? &o->late_ms
                                       : nullptr;
    if (!target) {
      std::fprintf(stderr,
                   "hvd_hello: unknown argument '%s' (takes --rounds N, "
                   "--late-rank R, --late-ms MS)\n",
                   argv[i]);
      return false;
    }
    if (i + 1 >= argc || (*target = ParseCount(argv[i + 1])) < 0) {
      std::fprintf(stderr, "hvd_hello: %s needs a whole number >= 0\n",
                   a.c_str());
      return false;
    }
    ++i;
  }
  if (o->rounds < 1) {
    std::fprintf(stderr, "hvd_hello: --rounds needs at least 1\n");
    return false;
  }
  return true;
}

bool Fail(const char* what, const hvd::Status& s) {
  std::fprintf(stderr, "hvd_hello: %s: %s\n", what, s.ToString().c_str());
  (void)hvd::shutdown();  // the error above is the one to report
  return false;
}

// One round: join, allreduce, leave. The value depends on the round, so a
// round that read an older generation's data would show a wrong sum.
bool Round(const Options& o, int round) {
  hvd::Status s = hvd::init();
  if (!s.ok()) return Fail("init", s);
  const int rank = hvd::rank();
  const int size = hvd::size();
  double value = rank + 1 + round;
  s = hvd::allreduce(&value, 1, hvd::ReduceOp::kSum);
  if (!s.ok()) return Fail("allreduce", s);
  const double expected = size * (size + 1) / 2.0 + double(size) * round;
  if (o.rounds == 1) {
    std::printf("rank %d/%d: sum=%g\n", rank, size, value);
  } else {
    std::printf("rank %d/%d: round %d sum=%g\n", rank, size, round + 1, value);
  }
  std::fflush(stdout);
  s = hvd::shutdown();
  if (value != expected) {
    std::fprintf(stderr, "hvd_hello: rank %d: sum is %g, expected %g\n", rank,
                 value, expected);
    return false;
  }
  if (!s.ok()) return Fail("shutdown", s);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) return 2;
  const char* env_rank = std::getenv("HOROVOD_RANK");
  const bool late =
      env_rank && o.late_rank >= 0 && ParseCount(env_rank) == o.late_rank;
  for (int round = 0; round < o.rounds; ++round) {
    if (late && round > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(o.late_ms));
    }
    if (!Round(o, round)) return 1;
  }
  return 0;
}
