#include "worker_modes.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "hvd/elastic.h"
#include "hvd/hvd.h"

namespace hvd::testing {

void WritePid(const std::string& path, pid_t pid) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << pid << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

hvd::Status AverageAndAddOne(std::vector<float>& weights) {
  std::vector<float> avg = weights;
  HVD_RETURN_IF_ERROR(
      hvd::allreduce("step", hvd::Tensor{avg.data(),
                                         hvd::DataType::kFloat32,
                                         {static_cast<int64_t>(avg.size())}}));
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = avg[i] + 1;
  return hvd::Status::Ok();
}

namespace {

bool AllMayStop(const StopWhen& when,
                std::chrono::steady_clock::time_point start, bool* stop) {
  float vote = 1.0f;
  if (hvd::rank() == 0) {
    const std::chrono::duration<double> ran =
        std::chrono::steady_clock::now() - start;
    const bool file_ok =
        when.file.empty() || std::filesystem::exists(when.file);
    vote = file_ok && ran.count() >= when.min_seconds ? 1.0f : 0.0f;
  }
  if (!hvd::allreduce(&vote, 1, hvd::ReduceOp::kMin).ok()) return false;
  *stop = vote > 0.5f;
  return true;
}

}  // namespace

// --steps N --work KIND: see the top of test_worker.cc.
int Steps(int steps, const std::string& work, const StopWhen& when,
          bool say_steps) {
  if (work != "allreduce" && work != "compute") {
    std::fprintf(stderr, "test_worker: --work allreduce or compute\n");
    return 2;
  }
  std::vector<float> data(1 << 18, 1.0f);
  volatile double sink = 0;
  const auto start = std::chrono::steady_clock::now();
  hvd::mark_step();  // the clock starts here
  for (int s = 0;; ++s) {
    if (s >= steps) {
      bool stop = true;
      if (when.set() && !AllMayStop(when, start, &stop)) return 5;
      if (stop) break;
    }
    if (work == "allreduce") {
      // As many on every rank (a rank's clock must not decide).
      for (int i = 0; i < 20; ++i) {
        if (!hvd::allreduce(data.data(), data.size(), hvd::ReduceOp::kSum)
                 .ok()) {
          return 5;
        }
      }
    } else {
      const auto end =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
      while (std::chrono::steady_clock::now() < end) {
        for (int i = 0; i < 1000; ++i) sink = sink + i * 0.5;
      }
    }
    hvd::mark_step();
    if (say_steps && hvd::rank() == 0) {
      std::printf("STEP %d\n", s + 1);
      std::fflush(stdout);
    }
  }
  return hvd::shutdown().ok() ? 0 : 1;
}

namespace {

// A TensorState that says each host update it hears.
class SayingState : public hvd::elastic::TensorState {
 public:
  explicit SayingState(std::string host) : host_(std::move(host)) {}
  void on_hosts_updated(int64_t timestamp,
                        hvd::elastic::HostUpdateResult result) override {
    std::printf("HOSTS_UPDATED host=%s result=%d\n", host_.c_str(),
                static_cast<int>(result));
    std::fflush(stdout);
    TensorState::on_hosts_updated(timestamp, result);
  }

 private:
  std::string host_;
};

}  // namespace

// --elastic-job: see the top of test_worker.cc.
int ElasticJob(int steps, int commit_every, int step_ms,
               const std::string& pid_dir, const std::string& fail_host) {
  const char* env_host = std::getenv("HVD_HOST");
  const char* env_slot = std::getenv("HVD_SLOT");
  const std::string host = env_host ? env_host : "";
  if (!pid_dir.empty()) {
    WritePid(pid_dir + "/" + host + "-" + (env_slot ? env_slot : "0") + ".pid",
             getpid());
  }
  std::vector<float> weights(1000, 0.0f);
  int64_t step = 0;
  int resets = 0, steps_run = 0;
  SayingState state(host);
  state.add("weights", &weights);
  state.add_counter("step", &step);
  state.register_reset_callback([&] { ++resets; });
  hvd::Status s = hvd::elastic::run(state, [&](hvd::elastic::State& st) {
    std::printf("START rank=%d size=%d step=%lld\n", hvd::rank(), hvd::size(),
                static_cast<long long>(step));
    std::fflush(stdout);
    int since_start = 0;
    for (; step < steps; ++step) {
      if ((host == fail_host || fail_host == "all") && ++since_start == 3) {
        std::fflush(stdout);
        _exit(3);
      }
      if (hvd::Status r = AverageAndAddOne(weights); !r.ok()) return r;
      ++steps_run;
      if (hvd::rank() == 0) {
        auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
        std::printf("STEP step=%lld size=%d ms=%lld\n",
                    static_cast<long long>(step + 1), hvd::size(),
                    static_cast<long long>(ms));
        std::fflush(stdout);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
      if ((step + 1) % commit_every == 0) {
        ++step;  // the commit holds the next step to run
        hvd::Status c = st.commit();
        // Hosts changed at the commit: the state is the commit's, so the
        // next start runs the next step.
        if (!c.ok()) return c;
        --step;
      }
    }
    return hvd::Status::Ok();
  });
  if (!s.ok()) {
    std::fprintf(stderr, "test_worker: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("ELASTIC rank=%d size=%d steps=%d weight=%g resets=%d\n",
              hvd::rank(), hvd::size(), steps_run, weights[0], resets);
  std::fflush(stdout);
  return hvd::shutdown().ok() ? 0 : 1;
}

}  // namespace hvd::testing
