// A training loop that makes one kind of trouble on one rank, for the
// tests of the flight recorder's report (issue: hung or slow jobs):
//
//   hvd_trouble_worker --trouble KIND --rank R [--steps N] [--pid-dir D]
//
// Each step allreduces "loss" (1 float), "grad/fc1.weight" (1024) and
// "grad/fc2.weight" (256), after 10 ms of "data loading" and each after
// 5 ms of "computing" it. At step 3 rank R:
//   skip      does not submit "grad/fc2.weight" and goes on
//   order     submits "grad/fc2.weight" before "grad/fc1.weight"
//   shape     submits "grad/fc1.weight" with 1000 floats
//   sleep     sleeps in its data loading before "grad/fc2.weight", until
//             killed
//   deadlock  takes two locks in the opposite order of another thread
//             before "grad/fc2.weight" (both wait forever)
//   slow      from step 1, computes each 3x as long (15 ms)
//   exit      exits with status 3 before "grad/fc2.weight" (a crash), 2 s
//             after the others submitted it
// The others go on as usual. With --pid-dir each writes D/RANK.pid after
// init (the test checks that none outlives the job). At the end every
// rank prints "DONE rank=R";
// an error is printed on stderr and the worker exits 1.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "hvd/hvd.h"

namespace {

struct Trouble {
  std::string kind;
  int rank = -1;
  bool Here(int step) const {
    return hvd::rank() == rank && (kind == "slow" || step == 3);
  }
};

hvd::Status Reduce(const std::string& name, std::vector<float>& data) {
  return hvd::allreduce(name, hvd::Tensor{data.data(),
                                          hvd::DataType::kFloat32,
                                          {static_cast<int64_t>(data.size())}});
}

// Two threads that each hold one lock and wait for the other's.
[[noreturn]] void Deadlock() {
  static std::mutex a, b;
  std::lock_guard<std::mutex> hold_a(a);
  std::thread other([] {
    std::lock_guard<std::mutex> hold_b(b);
    std::lock_guard<std::mutex> want_a(a);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::lock_guard<std::mutex> want_b(b);
  std::abort();  // not reached
}

// "Computes" a tensor, then allreduces it.
hvd::Status Reduce(const Trouble& t, int step, const std::string& name,
                   std::vector<float>& data) {
  const bool slow = t.Here(step) && t.kind == "slow";
  std::this_thread::sleep_for(std::chrono::milliseconds(slow ? 15 : 5));
  return Reduce(name, data);
}

hvd::Status Step(const Trouble& t, int step) {
  const bool here = t.Here(step);
  std::vector<float> loss(1, 1.0f),
      fc1(here && t.kind == "shape" ? 1000 : 1024, 1.0f), fc2(256, 1.0f);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));  // data loading
  HVD_RETURN_IF_ERROR(Reduce(t, step, "loss", loss));
  if (here && t.kind == "order") {
    HVD_RETURN_IF_ERROR(Reduce(t, step, "grad/fc2.weight", fc2));
    return Reduce(t, step, "grad/fc1.weight", fc1);
  }
  HVD_RETURN_IF_ERROR(Reduce(t, step, "grad/fc1.weight", fc1));
  if (here && t.kind == "skip") return hvd::Status::Ok();
  if (here && t.kind == "sleep") {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(3600));
  }
  if (here && t.kind == "deadlock") Deadlock();
  if (here && t.kind == "exit") {
    // Long after the others submitted "grad/fc2.weight" (5 ms), so that
    // they wait in it when it goes.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    std::fflush(stdout);
    _exit(3);
  }
  return Reduce(t, step, "grad/fc2.weight", fc2);
}

}  // namespace

int main(int argc, char** argv) {
  Trouble trouble;
  int steps = 6;
  std::string pid_dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--trouble") {
      trouble.kind = value;
    } else if (flag == "--rank") {
      trouble.rank = std::atoi(value.c_str());
    } else if (flag == "--pid-dir") {
      pid_dir = value;
    } else if (flag == "--steps") {
      steps = std::atoi(value.c_str());
    } else {
      std::fprintf(stderr, "hvd_trouble_worker: unknown flag %s\n",
                   flag.c_str());
      return 2;
    }
  }
  hvd::Status s = hvd::init();
  if (s.ok() && !pid_dir.empty()) {
    const std::string path = pid_dir + "/" + std::to_string(hvd::rank());
    std::ofstream(path + ".tmp") << getpid() << "\n";
    std::rename((path + ".tmp").c_str(), (path + ".pid").c_str());
  }
  for (int step = 1; s.ok() && step <= steps; ++step) s = Step(trouble, step);
  if (s.ok()) s = hvd::shutdown();
  if (!s.ok()) {
    std::fprintf(stderr, "hvd_trouble_worker: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("DONE rank=%d\n", hvd::rank());
  return 0;
}
