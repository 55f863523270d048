#include "runtime/engine/engine.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <utility>

#include "common/logging.h"
#include "runtime/affinity.h"
#include "runtime/engine/adasum.h"
#include "runtime/engine/message.h"
#include "runtime/engine/response_cache.h"
#include "runtime/metrics.h"
#include "runtime/timeline.h"

namespace hvd::runtime {
namespace {

// What Adasum takes: host allreduces of floating-point tensors.
Status CheckAdasum(const Request& request, const std::string& who) {
  if (request.type != OpType::kAllreduce) {
    return Status::InvalidArgument(
        who, std::string("is a ") + OpTypeName(request.type) +
                 "; Adasum is an allreduce operation (use Sum or Average)");
  }
  if (request.device >= 0) {
    return Status::InvalidArgument(
        who,
        "is a CUDA tensor; Adasum takes host tensors (copy it to the "
        "host)");
  }
  if (!AdasumTakes(request.dtype)) {
    return Status::InvalidArgument(
        who, std::string("is ") + std::string(DataTypeName(request.dtype)) +
                 "; Adasum takes float16, bfloat16, float32 and float64");
  }
  return Status::Ok();
}

}  // namespace

bool Completion::done() const { return done_.load(std::memory_order_acquire); }

Status Completion::Wait() {
  if (!done()) {
    std::unique_lock<std::mutex> lock(mu_);
    sleeper_.store(true, std::memory_order_seq_cst);
    cv_.wait(lock, [this] { return done_.load(std::memory_order_seq_cst); });
  }
  Collect();
  return status_;  // written before done_ (Set), never after
}

void Completion::Set(Status s, int64_t value) {
  // One thread completes a request (Refuse or the cycle's runner): no
  // second Set races this one.
  if (done_.load(std::memory_order_relaxed)) return;
  status_ = std::move(s);
  value_ = value;
  done_.store(true, std::memory_order_seq_cst);
  if (!sleeper_.load(std::memory_order_seq_cst)) return;
  // The sleeper holds mu_ from its flag until it sleeps: taking it here
  // waits for that, so the notify cannot come between.
  { std::lock_guard<std::mutex> lock(mu_); }
  cv_.notify_all();
}

void Completion::Refuse(Status s) {
  if (done_.load(std::memory_order_relaxed)) return;
  refused_ = true;
  Set(std::move(s));
}

bool Completion::refused() const { return done() && refused_; }

int64_t Completion::value() const { return done() ? value_ : 0; }

Engine::Engine(EngineOptions options, BackendSet* backends,
               ControlPlane* control)
    : options_(options),
      fusion_threshold_(options.fusion_threshold_bytes),
      tuner_(options.autotune && options.rank == 0
                 ? std::make_unique<Autotuner>(
                       options.tune,
                       Knobs{options.fusion_threshold_bytes, options.cycle_time,
                             options.cache_capacity > 0,
                             options.hierarchical_allreduce,
                             options.hierarchical_allgather, true})
                 : nullptr),
      cache_enabled_(options.cache_capacity > 0),
      backends_(backends),
      control_(control),
      driver_(*this, *control, options.cycle_time),
      negotiator_(options.size, options.timeline != nullptr),
      executor_(options.rank, options.size, backends, options.timeline),
      cache_(options.cache_capacity),
      flight_(options.flight_recorder_entries, options.process_set),
      tally_(Metrics::Process().NewCycleTally()),
      stall_(options.stall, std::chrono::steady_clock::now()) {
  // The thread is named and bound before the engine is used: a caller
  // may run the first cycles itself, and tools look for the thread.
  std::promise<void> ready;
  std::future<void> started = ready.get_future();
  control_->SetMerger(&merger_);
  thread_ = std::thread([this, &ready] { Loop(&ready); });
  started.wait();
}

Engine::~Engine() {
  Shutdown();
  control_->SetMerger(nullptr);
  WriteAutotuneLog();
}

Status Engine::Validate(const Request& request, void* data, Output* out) const {
  // Built only for an error: this runs for every submission.
  auto who = [&request] { return "tensor '" + request.name + "'"; };
  if (request.name.empty()) {
    return Status::InvalidArgument("tensor name", "is empty");
  }
  if (request.type == OpType::kJoin || request.type == OpType::kBarrier) {
    return Status::Ok();
  }
  if (request.count < 0) {
    return Status::InvalidArgument(who(), "has a negative element count");
  }
  if (!request.shape.empty()) {
    int64_t n = 1;
    for (int64_t d : request.shape) {
      if (d < 0)
        return Status::InvalidArgument(who(), "has a negative dimension");
      n *= d;
    }
    if (n != request.count) {
      return Status::InvalidArgument(
          who(), "has a shape of " + std::to_string(n) + " elements but " +
                     std::to_string(request.count) + " were given");
    }
  }
  if (request.count > 0 && data == nullptr) {
    return Status::InvalidArgument(who(), "has no data");
  }
  const bool outputs = request.type == OpType::kAllgather ||
                       request.type == OpType::kReducescatter ||
                       request.type == OpType::kAlltoall;
  if (outputs && out == nullptr) {
    return Status::InvalidArgument(who(), "needs an output");
  }
  if (request.device >= 0) {
    if (!backends_->has_device()) {
      return Status::InvalidArgument(
          who(), "is on CUDA device " + std::to_string(request.device) +
                     " but this libhvd was built without NCCL (rebuild where "
                     "CUDA and NCCL are installed, or pass a host tensor)");
    }
    if (request.device >= backends_->cuda_devices()) {
      return Status::InvalidArgument(
          who(), "is on CUDA device " + std::to_string(request.device) +
                     " but this process sees " +
                     std::to_string(backends_->cuda_devices()) +
                     " (check CUDA_VISIBLE_DEVICES and the driver)");
    }
    if (request.type != OpType::kAllreduce &&
        request.type != OpType::kBroadcast) {
      return Status::InvalidArgument(
          who(), std::string("is a CUDA tensor; ") + OpTypeName(request.type) +
                     " takes host tensors only (copy it to the host)");
    }
    if (request.dtype == DataType::kInt16) {
      return Status::InvalidArgument(
          who(),
          "is an int16 CUDA tensor; NCCL has no int16 (use int32, or a "
          "host tensor)");
    }
    if ((request.prescale != 1.0 || request.postscale != 1.0) &&
        request.reduce != ReduceOp::kSum) {
      return Status::InvalidArgument(
          who(), "on CUDA takes scale factors with Sum and Average only");
    }
  }
  if (request.type == OpType::kAlltoall) {
    int64_t rows = request.shape.empty() ? request.count : request.shape[0];
    int64_t sum = 0;
    for (int64_t v : request.splits) sum += v < 0 ? -(1LL << 62) : v;
    if (static_cast<int>(request.splits.size()) != options_.size ||
        sum != rows) {
      return Status::InvalidArgument(
          who(), "alltoall splits must give one count per rank (" +
                     std::to_string(options_.size) + ") adding up to the " +
                     std::to_string(rows) + " rows");
    }
  }
  if (request.adasum) {
    HVD_RETURN_IF_ERROR(CheckAdasum(request, who()));
  }
  if (request.type == OpType::kBroadcast &&
      (request.root < 0 || request.root >= options_.size)) {
    return Status::InvalidArgument(who(), "broadcast root " +
                                              std::to_string(request.root) +
                                              " is not a rank of a job of " +
                                              std::to_string(options_.size));
  }
  return Status::Ok();
}

void Engine::AddLocked(Request request, void* data, Output* out,
                       const std::shared_ptr<Completion>& done, Status& refuse,
                       Status& gone, uint64_t flight) {
  auto who = [&request] { return "tensor '" + request.name + "'"; };
  // A failed or stopped engine is not the caller's mistake: the operation
  // fails as a collective would (not a refusal of its arguments).
  if (refuse.ok() && !failed_.ok()) gone = failed_;
  if (refuse.ok() && gone.ok() && stop_) {
    gone = Status::Aborted(who(), "the engine has shut down");
  }
  if (!gone.ok()) return;
  // Counted before the fast lane's flag is looked at (FastStillClear).
  CountQueuedLocked();
  // (A pending request's completion is not done, so not collected: its
  // name is held.)
  Pending* held = nullptr;
  if (refuse.ok() && (FastNameLocked(request.name) ||
                      (held = HoldLocked(request.name, done)) == nullptr)) {
    refuse = Status::InvalidArgument(
        who(), "is already in flight on rank " + std::to_string(options_.rank) +
                   "; wait for it before submitting the name again");
  }
  if (!refuse.ok()) return;
  Pending& p = *held;
  const bool flat = request.shape.empty() && request.type != OpType::kJoin &&
                    request.type != OpType::kBarrier;
  if (request.device >= 0) device_seen_ = true;
  const bool allreduce = request.type == OpType::kAllreduce;
  // A flat tensor's one dimension goes into the entry's shape, whose
  // buffer the name's last request used: no allocation.
  std::vector<int64_t> shape = std::move(p.request.shape);
  p.request = std::move(request);
  if (flat) {
    shape.assign(1, p.request.count);
    p.request.shape = std::move(shape);
  }
  p.data = data;
  p.out = out;
  p.done = done;
  p.flight = flight != 0 ? flight
                         : flight_.Submitted(p.request,
                                             std::chrono::steady_clock::now());
  fresh_.push_back(&p);
  if (allreduce && allreduces_pending_++ == 0) {
    allreduce_since_ = std::chrono::steady_clock::now();
  }
}

Pending* Engine::FindPendingLocked(const std::string& name) {
  auto it = names_.find(name);
  return it != names_.end() && it->second.live ? &it->second : nullptr;
}

void Engine::EndPendingLocked(Pending& p) {
  p.live = false;
  --live_;
  p.done.reset();
  p.data = nullptr;
  p.out = nullptr;
  p.own.clear();
  p.counts.clear();
  p.all_splits.clear();
}

bool Engine::FastNameLocked(const std::string& name) const {
  return fast_busy_.load(std::memory_order_seq_cst) && name == fast_name_;
}

bool Engine::Holds(const Pending& p) {
  if (p.live) return true;
  // (An expired hold, the usual case, needs no lock of its own.)
  if (p.held.expired()) return false;
  std::shared_ptr<Completion> c = p.held.lock();
  return c && !c->collected();
}

bool Engine::NameHeldLocked(const std::string& name) const {
  if (FastNameLocked(name)) return true;
  auto it = names_.find(name);
  return it != names_.end() && Holds(it->second);
}

Pending* Engine::HoldLocked(const std::string& name,
                            const std::shared_ptr<Completion>& done) {
  auto [it, added] = names_.try_emplace(name);
  Pending& p = it->second;
  if (!added && Holds(p)) return nullptr;
  p.held = done;
  p.live = true;
  ++live_;
  p.flight = 0;
  p.cache_id = UINT32_MAX;
  p.cache_generation = 0;
  p.placeholder = false;
  // Entries of collected or forgotten results are dropped now and then.
  if (names_.size() >= prune_at_) {
    for (auto h = names_.begin(); h != names_.end();) {
      h = Holds(h->second) ? std::next(h) : names_.erase(h);
    }
    prune_at_ = std::max<size_t>(64, 2 * names_.size());
  }
  return &p;
}

void Engine::AllreducesDoneLocked(int n,
                                  std::chrono::steady_clock::time_point now) {
  if (n <= 0 || allreduces_pending_ <= 0) return;
  allreduces_pending_ = std::max(0, allreduces_pending_ - n);
  if (allreduces_pending_ == 0) {
    Metrics::Process().AllreduceBusy(
        std::chrono::duration<double>(now - allreduce_since_).count());
  }
}

std::shared_ptr<Completion> Engine::Enqueue(Request request, void* data,
                                            Output* out, bool notify,
                                            std::shared_ptr<Completion> done) {
  if (!done) done = std::make_shared<Completion>();
  Status refuse = Validate(request, data, out);
  Status gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    AddLocked(std::move(request), data, out, done, refuse, gone);
  }
  if (!refuse.ok()) {
    done->Refuse(refuse);
  } else if (!gone.ok()) {
    done->Set(gone);
  } else if (notify) {
    control_->Notify();
  }
  return done;
}

Status Engine::Wait(const std::shared_ptr<Completion>& done, bool notified) {
  if (done->done()) return done->Wait();
  // A waiting caller has ended its burst of submissions: the engine
  // thread need not wait for more.
  CycleDriver::Waiting waiting(driver_);
  driver_.Drive([&done] { return done->done(); }, notified);
  return done->Wait();
}

std::vector<std::shared_ptr<Completion>> Engine::EnqueueGroup(
    std::vector<std::pair<Request, void*>> requests,
    std::vector<std::shared_ptr<Completion>> done) {
  std::vector<Status> refuse, gone(requests.size());
  done.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!done[i]) done[i] = std::make_shared<Completion>();
    refuse.push_back(Validate(requests[i].first, requests[i].second, nullptr));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < requests.size(); ++i) {
      AddLocked(std::move(requests[i].first), requests[i].second, nullptr,
                done[i], refuse[i], gone[i]);
    }
  }
  for (size_t i = 0; i < done.size(); ++i) {
    if (!refuse[i].ok()) {
      done[i]->Refuse(refuse[i]);
    } else if (!gone[i].ok()) {
      done[i]->Set(gone[i]);
    }
  }
  control_->Notify();
  return done;
}

void Engine::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    CountQueuedLocked();
  }
  control_->Notify();
  if (thread_.joinable()) thread_.join();
}

void Engine::FailAll(const Status& s) {
  std::vector<std::pair<uint64_t, std::shared_ptr<Completion>>> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_.ok()) failed_ = s;
    CountQueuedLocked();
    for (auto& [name, p] : names_) {
      if (!p.live) continue;
      pending.emplace_back(p.flight, std::move(p.done));
      EndPendingLocked(p);
    }
    fresh_.clear();
    AllreducesDoneLocked(allreduces_pending_);
  }
  flight_.FinishedEach(
      pending, [](const auto& entry) { return entry.first; },
      std::chrono::steady_clock::now(), false);
  if (!pending.empty() && options_.on_collectives_failed) {
    options_.on_collectives_failed();
  }
  for (auto& [flight, done] : pending) done->Set(s);
}

void Engine::Loop(std::promise<void>* ready) {
  // Named, so tools (top -H, the tests) can tell it from the others.
  pthread_setname_np(pthread_self(), "hvd-engine");
  // A batch thread: waking it does not preempt the thread running on its
  // CPU. Where a rank's callers and its engine thread share CPUs (a CPU a
  // rank), a submission that woke the engine thread gave it the CPU at
  // once, in the middle of the caller's burst of submissions, only for it
  // to let the burst finish: 64 asynchronous allreduces of 16 KiB,
  // submitted then waited for, 195 -> 135 us a step at 2 ranks on 2
  // cores. With a CPU free the woken thread runs at once as before; on a
  // busy one it runs when the caller waits (and drives the cycles itself
  // meanwhile) or at the scheduler's next tick. Not where ranks outnumber
  // CPUs: there a peer's ring must take the CPU (4 bytes at -np 4 on 2
  // cores, 9.5 -> 17 us as a batch thread).
  if (options_.batch_thread) {
    sched_param batch{};
    (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);
  }
  if (options_.thread_cpu >= 0) {
    if (Status s = BindThread(options_.thread_cpu); !s.ok()) {
      HVD_LOG(Warning) << s.ToString();
    }
  }
  ready->set_value();
  driver_.Loop();
}

bool Engine::Due() {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_ || !fresh_.empty();
}

bool Engine::HasPending() {
  std::lock_guard<std::mutex> lock(mu_);
  return live_ > 0;
}

bool Engine::Unfinished() {
  // After a fast-lane call: nothing pending then, and nothing queued since
  // (a submitter that notifies reaches the engine thread itself: a fast
  // lane turn leaves the driving flag clear).
  if (std::exchange(fast_quiet_, false) &&
      queued_.load(std::memory_order_acquire) == fast_quiet_at_) {
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  return live_ > 0 || stop_ || !fresh_.empty();
}

size_t Engine::Fresh() {
  std::lock_guard<std::mutex> lock(mu_);
  return fresh_.size();
}

bool Engine::Stopping() {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

std::string Engine::StallReport(std::chrono::steady_clock::time_point now,
                                bool* past_shutdown) const {
  return negotiator_.StallReport(now, options_.stall.warning,
                                 options_.stall.shutdown, cache_,
                                 past_shutdown);
}

CycleDriver::Turn Engine::TakeTurn(bool peer, bool driver) {
  uint8_t stop;
  bool go;
  {
    std::lock_guard<std::mutex> lock(mu_);
    go = stop_ || !fresh_.empty() || peer;
    stop = stop_ ? kShutdown : kRunning;
  }
  // Only what is half-negotiated can stall (and reading the clock every
  // turn would cost the steady state).
  if (stop == kRunning && options_.rank == 0 && !negotiator_.Idle() &&
      stall_.Inspect(
          std::chrono::steady_clock::now(),
          [this](auto now, bool* past) { return StallReport(now, past); })) {
    stop = kStalled;
    go = true;
  }
  if (!go) return CycleDriver::Turn::kIdle;
  if (driver_.cycle_time().count() > 0 && stop == kRunning) driver_.Pace();
  uint8_t everyone = kRunning;
  bool handed_off = false;
  Status s = RunCycle(stop, &everyone, driver, &handed_off);
  if (handed_off) return CycleDriver::Turn::kHandOff;
  return Conclude(s, everyone);
}

CycleDriver::Turn Engine::Conclude(const Status& s, uint8_t everyone) {
  if (!s.ok()) {
    FailAll(s);
    return CycleDriver::Turn::kEnded;
  }
  if (everyone != kRunning) {
    FailAll(everyone == kStalled
                ? Status::Aborted("rank " + std::to_string(options_.rank),
                                  stall_.ShutdownMessage([&] {
                                    bool unused = false;
                                    return StallReport(
                                        std::chrono::steady_clock::now(),
                                        &unused);
                                  }()))
                : Status::Aborted("rank " + std::to_string(options_.rank),
                                  "the job is shutting down (a rank called "
                                  "hvd::shutdown())"));
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      CountQueuedLocked();
    }
    return CycleDriver::Turn::kEnded;
  }
  return CycleDriver::Turn::kRan;
}

}  // namespace hvd::runtime
