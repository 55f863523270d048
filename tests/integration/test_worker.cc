// A worker for the launcher's integration tests. Flags pick the behaviour:
//   --no-init            do not call hvd::init (a worker that never joins)
//   --pid-dir D          write D/RANK.pid (and D/RANK.child.pid with
//                        --spawn-child, a grandchild that sleeps); with
//                        --fail-rank, D/RANK.ready once past the barrier
//   --fail-rank R --code C   rank R exits with C once all pids are written
//   --sleep S            then sleep S seconds (every other rank)
//   --lines N            print N long lines to stdout and to stderr
//   --deny-cross-memory  process_vm_readv and pidfd_getfd fail with EPERM
//                        (a seccomp filter, as a container's), before
//                        hvd::init
//   --check-token-hidden exit 4 if the job token is on this process's or
//                        its parent's command line
//   --stream N           ignore SIGTERM and run N allreduces; rank 1
//                        SIGKILLs itself after 20; the others must fail
//                        fast: they print "stream failed" and exit 7
//   --gradients          two steps of hvd::DistributedGradients (2 passes
//                        per step, fp16 on the wire); exit 6 on a wrong value
//   --elastic            20 steps under hvd::elastic::run, committing every
//                        5; at step 12 rank 1 leaves the job once (as a
//                        failed peer would) and every rank resets to the
//                        commit of step 10; prints "ELASTIC rank=R steps=S
//                        weight=W resets=N"
//   --steps N --work allreduce|compute   N training steps of one kind:
//                        20 allreduces of 1 MiB, or 20 ms of CPU work;
//                        each ends with hvd::mark_step() (the metrics tests);
//                        --until-file F: then more steps until F exists,
//                        --min-seconds S: until S seconds have passed (rank
//                        0 decides; every rank stops after the same step);
//                        --say-steps: rank 0 prints "STEP N" after each
//   --out-of-step        every rank calls shutdown() after init(); rank 0
//                        then exits 0, the others init() again (the next
//                        generation), which must fail naming rank 0
//                        (exit 1, the error on stderr)
//   --elastic-job N      N steps under hvd::elastic::run in an elastic job
//                        (no failure of its own), committing every
//                        --commit-every K (5) and sleeping --step-ms M (50)
//                        per step; prints "START rank=R size=S step=T" at
//                        each (re)start, rank 0 "STEP step=T size=S ms=W"
//                        (W: wall clock) per step, and "ELASTIC ..." at the
//                        end; --pid-dir D writes D/HOST-SLOT.pid;
//                        --fail-host H: a worker on host H (any host for
//                        "all") exits 3 at its third step after each
//                        start; every host update heard is printed as
//                        "HOSTS_UPDATED host=H result=N"
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "hvd/elastic.h"
#include "hvd/hvd.h"
#include "worker_modes.h"

namespace {

using hvd::testing::AverageAndAddOne;
using hvd::testing::ElasticJob;
using hvd::testing::Steps;
using hvd::testing::StopWhen;
using hvd::testing::WritePid;

int EnvRank() {
  const char* r = std::getenv("HOROVOD_RANK");
  return r ? std::atoi(r) : 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)),
                     std::istreambuf_iterator<char>());
}

}  // namespace

// What a container's seccomp profile does to cross-memory attach: the call
// fails with EPERM (this thread and every thread it starts later).
bool DenyCrossMemory() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_process_vm_readv, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_pidfd_getfd, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(std::size(filter)), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// The blocking named allreduce of one name whose description changes
// between calls (its length, its shape, its op, its scale), each asked
// twice in a row so that the second takes the fast lane as the same
// request: every call reduces what it asked for. False (and a line on
// stderr) when one does not.
bool ExactChangingAllreduce(int rank, int size) {
  struct Ask {
    std::vector<int64_t> shape;
    hvd::ReduceOp op;
    double prescale;
  };
  const std::vector<Ask> asks = {
      {{4}, hvd::ReduceOp::kSum, 1},    {{8}, hvd::ReduceOp::kSum, 1},
      {{2, 4}, hvd::ReduceOp::kSum, 1}, {{8}, hvd::ReduceOp::kMax, 1},
      {{8}, hvd::ReduceOp::kSum, 2},    {{4}, hvd::ReduceOp::kSum, 1}};
  for (int round = 0; round < 3; ++round) {
    for (size_t k = 0; k < 2 * asks.size(); ++k) {
      const Ask& a = asks[k / 2];
      int64_t n = 1;
      for (int64_t d : a.shape) n *= d;
      std::vector<float> x(static_cast<size_t>(n) + 4,
                           static_cast<float>(rank + 1));
      hvd::Status s = hvd::allreduce(
          "exact.changing",
          hvd::Tensor{x.data(), hvd::DataType::kFloat32, a.shape}, a.op,
          a.prescale);
      const float want =
          a.op == hvd::ReduceOp::kMax
              ? static_cast<float>(size)
              : static_cast<float>(a.prescale * size * (size + 1) / 2);
      for (size_t i = 0; s.ok() && i < x.size(); ++i) {
        // The 4 elements past the tensor are not its own.
        const float expect =
            i < static_cast<size_t>(n) ? want : static_cast<float>(rank + 1);
        if (x[i] != expect) {
          std::fprintf(stderr,
                       "exact: changing allreduce, ask %zu: element %zu is "
                       "%g, not %g\n",
                       k, i, x[i], expect);
          return false;
        }
      }
      if (!s.ok()) {
        std::fprintf(stderr, "exact: changing allreduce: %s\n",
                     s.ToString().c_str());
        return false;
      }
    }
  }
  return true;
}

int main(int argc, char** argv) {
  bool init = true, spawn_child = false, check_token = false;
  bool deny_cross_memory = false;
  bool gradients = false, exact = false, print_cpus = false, elastic = false;
  bool out_of_step = false, say_steps = false;
  int stream = 0, elastic_steps = 0, commit_every = 5, step_ms = 50;
  std::string fail_host, work;
  int steps = 0;
  StopWhen stop_when;
  std::string pid_dir;
  int fail_rank = -1, code = 0, sleep_s = 0, lines = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : ""; };
    if (a == "--no-init")
      init = false;
    else if (a == "--pid-dir")
      pid_dir = next();
    else if (a == "--spawn-child")
      spawn_child = true;
    else if (a == "--fail-rank")
      fail_rank = std::stoi(next());
    else if (a == "--code")
      code = std::stoi(next());
    else if (a == "--sleep")
      sleep_s = std::stoi(next());
    else if (a == "--lines")
      lines = std::stoi(next());
    else if (a == "--check-token-hidden")
      check_token = true;
    else if (a == "--deny-cross-memory")
      deny_cross_memory = true;
    else if (a == "--gradients")
      gradients = true;
    else if (a == "--exact")
      exact = true;
    else if (a == "--print-cpus")
      print_cpus = true;
    else if (a == "--stream")
      stream = std::stoi(next());
    else if (a == "--elastic")
      elastic = true;
    else if (a == "--say-steps")
      say_steps = true;
    else if (a == "--out-of-step")
      out_of_step = true;
    else if (a == "--elastic-job")
      elastic_steps = std::stoi(next());
    else if (a == "--commit-every")
      commit_every = std::stoi(next());
    else if (a == "--step-ms")
      step_ms = std::stoi(next());
    else if (a == "--fail-host")
      fail_host = next();
    else if (a == "--steps")
      steps = std::stoi(next());
    else if (a == "--work")
      work = next();
    else if (a == "--until-file")
      stop_when.file = next();
    else if (a == "--min-seconds")
      stop_when.min_seconds = std::stod(next());
    else {
      std::fprintf(stderr, "test_worker: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  if (deny_cross_memory && !DenyCrossMemory()) {
    std::perror("test_worker: seccomp");
    return 2;
  }
  if (init) {
    hvd::Status s = hvd::init();
    if (!s.ok()) {
      std::fprintf(stderr, "test_worker: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  const int rank = init ? hvd::rank() : EnvRank();
  if (out_of_step) {
    (void)hvd::shutdown();
    if (rank == 0) return 0;
    hvd::Status again = hvd::init();
    std::fprintf(stderr, "test_worker: second init: %s\n",
                 again.ToString().c_str());
    return again.ok() ? 0 : 1;
  }
  if (steps > 0) return Steps(steps, work, stop_when, say_steps);
  if (elastic_steps > 0)
    return ElasticJob(elastic_steps, commit_every, step_ms, pid_dir, fail_host);
  if (elastic) {
    std::vector<float> weights(1000, 0.0f);
    int64_t step = 0;
    int resets = 0, steps_run = 0;
    bool failed_once = false;
    hvd::elastic::TensorState state;
    state.add("weights", &weights);
    state.add_counter("step", &step);
    state.register_reset_callback([&] { ++resets; });
    hvd::Status s = hvd::elastic::run(state, [&](hvd::elastic::State& st) {
      for (; step < 20; ++step) {
        if (step == 12 && hvd::rank() == 1 && !failed_once) {
          failed_once = true;
          (void)hvd::shutdown();
          return hvd::Status::Aborted("test_worker", "rank 1 left at step 12");
        }
        if (hvd::Status r = AverageAndAddOne(weights); !r.ok()) return r;
        ++steps_run;
        if ((step + 1) % 5 == 0) {
          ++step;  // the commit holds the next step to run
          hvd::Status c = st.commit();
          --step;
          if (!c.ok()) return c;
        }
      }
      return hvd::Status::Ok();
    });
    if (!s.ok()) {
      std::fprintf(stderr, "test_worker: %s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("ELASTIC rank=%d steps=%d weight=%g resets=%d\n", hvd::rank(),
                steps_run, weights[0], resets);
    std::fflush(stdout);
    (void)hvd::shutdown();
    return 0;
  }
  if (print_cpus) {
    // The process's CPUs and its engine thread's (started by a barrier),
    // as the kernel reports them: "CPUS <rank> <process> <engine>".
    if (!hvd::barrier().ok()) return 9;
    auto allowed = [](const std::string& status) {
      std::string key = "Cpus_allowed_list:";
      size_t at = status.find(key);
      if (at == std::string::npos) return std::string("?");
      at = status.find_first_not_of(" \t", at + key.size());
      return status.substr(at, status.find('\n', at) - at);
    };
    std::string engine = "none";
    for (const auto& e :
         std::filesystem::directory_iterator("/proc/self/task")) {
      if (ReadFile(e.path().string() + "/comm") == "hvd-engine\n") {
        engine = allowed(ReadFile(e.path().string() + "/status"));
      }
    }
    std::printf("CPUS %d %s %s\n", rank,
                allowed(ReadFile("/proc/self/status")).c_str(), engine.c_str());
    // No rank may shut down (which ends the others' engines) before every
    // rank has looked.
    if (!hvd::barrier().ok()) return 9;
  }
  if (check_token) {
    const char* token = std::getenv("HVD_JOB_TOKEN");
    if (!token || !*token) return 5;
    std::string mine = ReadFile("/proc/self/cmdline");
    std::string parent =
        ReadFile("/proc/" + std::to_string(getppid()) + "/cmdline");
    if (mine.find(token) != std::string::npos ||
        parent.find(token) != std::string::npos) {
      std::fprintf(stderr, "token found on a command line\n");
      return 4;
    }
    std::printf("token hidden\n");
  }
  if (exact) {
    if (!ExactChangingAllreduce(rank, hvd::size())) return 9;
    // Allreduce and allgather results every rank can check exactly (small
    // integers in floats), in sizes that go through the backend.
    // Each size in a plain buffer and in one from hvd::alloc_shared; 10 MB
    // is pipelined where the allreduce is hierarchical (uneven pieces).
    const int size = hvd::size();
    for (size_t n : {size_t{100003}, size_t{600000}, size_t{2500007}}) {
      for (bool shared : {false, true}) {
        std::vector<float> own(shared ? 0 : n);
        float* x = own.data();
        if (shared) {
          hvd::StatusOr<void*> p = hvd::alloc_shared(n * sizeof(float));
          if (!p.ok()) {
            std::fprintf(stderr, "exact: %s\n", p.status().ToString().c_str());
            return 9;
          }
          x = static_cast<float*>(*p);
        }
        for (size_t i = 0; i < n; ++i)
          x[i] = static_cast<float>((rank + 1) * (i % 5 + 1));
        hvd::Status s = hvd::allreduce(x, n, hvd::ReduceOp::kSum);
        if (!s.ok()) {
          std::fprintf(stderr, "exact: %s\n", s.ToString().c_str());
          return 9;
        }
        for (size_t i = 0; i < n; ++i) {
          if (x[i] != static_cast<float>(size * (size + 1) / 2 * (i % 5 + 1))) {
            std::fprintf(stderr, "exact: allreduce element %zu is %g\n", i,
                         x[i]);
            return 9;
          }
        }
        // Every peer is done with this buffer before it goes.
        if (shared && (!hvd::barrier().ok() || !hvd::free_shared(x).ok())) {
          return 9;
        }
      }
    }
    // A fused group (through the fusion buffer, itself shared memory).
    std::vector<std::vector<float>> group(8, std::vector<float>(5000));
    std::vector<hvd::Handle> handles;
    for (size_t t = 0; t < group.size(); ++t) {
      for (size_t i = 0; i < group[t].size(); ++i)
        group[t][i] = static_cast<float>((rank + 1) * (t + i % 3));
      handles.push_back(hvd::allreduce_async(
          "exact.fused." + std::to_string(t), group[t].data(),
          static_cast<int64_t>(group[t].size()), hvd::DataType::kFloat32,
          hvd::ReduceOp::kSum));
    }
    for (size_t t = 0; t < group.size(); ++t) {
      if (!handles[t].wait().ok()) return 9;
      for (size_t i = 0; i < group[t].size(); ++i) {
        if (group[t][i] !=
            static_cast<float>(size * (size + 1) / 2 * (t + i % 3))) {
          std::fprintf(stderr, "exact: fused tensor %zu element %zu is %g\n", t,
                       i, group[t][i]);
          return 9;
        }
      }
    }
    std::vector<int32_t> mine((rank + 1) * 1000, rank);
    hvd::Output out;
    hvd::Status s =
        hvd::allgather("exact.gather",
                       hvd::Tensor{mine.data(),
                                   hvd::DataType::kInt32,
                                   {static_cast<int64_t>(mine.size())}},
                       &out);
    if (!s.ok()) {
      std::fprintf(stderr, "exact: %s\n", s.ToString().c_str());
      return 9;
    }
    const int32_t* got = reinterpret_cast<const int32_t*>(out.data.data());
    size_t at = 0;
    for (int q = 0; q < size; ++q) {
      for (int i = 0; i < (q + 1) * 1000; ++i, ++at) {
        if (got[at] != q) {
          std::fprintf(stderr, "exact: allgather element %zu is %d\n", at,
                       got[at]);
          return 9;
        }
      }
    }
    std::printf("exact ok\n");
    return hvd::shutdown().ok() ? 0 : 9;
  }
  if (stream > 0) {
    // The launcher's SIGTERM must not be what ends this rank: its own
    // collectives have to notice the dead peer.
    signal(SIGTERM, SIG_IGN);
    std::vector<float> x(1 << 16, 1.0f);
    for (int i = 0; i < stream; ++i) {
      if (rank == 1 && i == 20) raise(SIGKILL);
      hvd::Status s = hvd::allreduce(x.data(), x.size(), hvd::ReduceOp::kSum);
      if (!s.ok()) {
        std::fprintf(stderr, "stream failed after %d: %s\n", i,
                     s.ToString().c_str());
        return 7;
      }
    }
    return 0;
  }
  if (gradients) {
    hvd::DistributedGradients grads(2, hvd::Compression::kFP16);
    for (int step = 0; step < 2; ++step) {
      for (int pass = 0; pass < 2; ++pass) {
        std::vector<float> g(1000, static_cast<float>(rank + pass));
        if (!grads.add("layer/kernel", g.data(), g.size()).ok()) return 6;
        auto stepped = grads.end_pass();
        if (!stepped.ok()) {
          std::fprintf(stderr, "%s\n", stepped.status().ToString().c_str());
          return 6;
        }
        if (*stepped != (pass == 1)) return 6;
        if (!*stepped) continue;
        // Sum over the passes (r + 0) + (r + 1), averaged over ranks.
        const int size = hvd::size();
        float want = 0;
        for (int r = 0; r < size; ++r) want += 2.0f * r + 1.0f;
        want /= size;
        for (float x : g) {
          if (x != want) {
            std::fprintf(stderr, "gradient %g, expected %g\n", x, want);
            return 6;
          }
        }
      }
    }
    std::printf("gradients ok\n");
  }
  if (!pid_dir.empty()) {
    if (spawn_child) {
      pid_t child = fork();
      if (child == 0) {
        execlp("sleep", "sleep", "300", static_cast<char*>(nullptr));
        _exit(127);
      }
      WritePid(pid_dir + "/" + std::to_string(rank) + ".child.pid", child);
    }
    if (const char* job = std::getenv("HVD_JOB_ID")) {
      std::ofstream(pid_dir + "/job") << job;
    }
    WritePid(pid_dir + "/" + std::to_string(rank) + ".pid", getpid());
  }
  std::string pad(120, 'x');
  for (int i = 0; i < lines; ++i) {
    std::printf("rank %d line %d %s\n", rank, i, pad.c_str());
    std::fprintf(stderr, "rank %d line %d %s\n", rank, i, pad.c_str());
  }
  std::fflush(stdout);
  if (init && fail_rank >= 0) {
    // Everyone is up before anyone fails, so the test sees all pids.
    hvd::Status s = hvd::barrier();
    if (!s.ok()) return 1;
    // Past the barrier: a test may now kill ranks without the others
    // failing in it (they sleep, and the job's stop names the killed rank).
    if (!pid_dir.empty()) {
      std::ofstream(pid_dir + "/" + std::to_string(rank) + ".ready") << "";
    }
  }
  if (rank == fail_rank) return code;
  if (sleep_s > 0) std::this_thread::sleep_for(std::chrono::seconds(sleep_s));
  if (init) (void)hvd::shutdown();
  return 0;
}
