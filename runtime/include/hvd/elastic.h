// Elastic training for C++ workers, as Horovod's hvd.elastic: a state that
// can be committed, restored and synchronised, and run(), which calls the
// training function again after a reset instead of letting the job die.
//
// A reset happens when a collective fails because a peer is gone (a dead
// or removed host, a timeout) or when commit() finds that the job's hosts
// changed. run() then goes back to the last commit (not after a host
// change: the state was just committed), leaves the job, joins it again
// (in an elastic job, its next membership: a new rank and size), runs the
// reset callbacks, copies the state from the new rank 0 to every rank, and
// calls the training function again. The function should pick up where
// the state says (epoch, batch), and commit every few batches: what is
// redone after a failure is what came after the last commit.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hvd/hvd.h"
#include "hvd/status.h"

namespace hvd::elastic {

// What a host update did to the job's hosts (Horovod's HostUpdateResult).
enum class HostUpdateResult : int {
  kNoUpdate = 0,
  kRemoved = 1,
  kAdded = 2,
  kMixed = 3,  // removed and added
};

class State {
 public:
  virtual ~State() = default;

  // Keeps a copy of the state as the point to come back to, then checks
  // for host updates (check_host_updates) and returns its status.
  Status commit();
  // Whether the job's hosts changed since the last check, as rank 0 sees
  // it (an update from the launcher newer than the last acted on, or a
  // new membership), decided alike on every rank: if so returns an
  // Aborted status that the training function should return (run()
  // resets on it, without a sync when hosts were only removed).
  Status check_host_updates();
  // A host update from the launcher, as Horovod's driver sends it
  // (seconds since the epoch): queued for the next check. Called from the
  // listener's thread; an override must call this one.
  virtual void on_hosts_updated(int64_t timestamp, HostUpdateResult result);
  // Back to the last commit (the state as it was when run() started, if
  // never committed).
  void restore();
  // Every rank takes rank 0's state.
  Status sync();

  // Called after each reset, before sync (e.g. to scale a learning rate to
  // the new size).
  void register_reset_callback(std::function<void()> callback);

  // For run(): whether the last check found the hosts changed (and
  // clears it), whether they were only removed (the survivors' state is
  // already the same: no sync), and the reset callbacks.
  bool take_hosts_updated();
  bool hosts_only_removed() const { return only_removed_; }
  void on_reset();

 protected:
  // Copy the live state aside / back, and broadcast it from rank 0.
  virtual void save() = 0;
  virtual void load() = 0;
  virtual Status broadcast() = 0;

 private:
  std::vector<std::function<void()>> callbacks_;
  bool hosts_updated_ = false;
  bool only_removed_ = false;
  bool saved_ = false;
  int64_t commits_ = 0;  // since the last sync: names the checks' broadcast
  int64_t last_updated_timestamp_ = 0;  // the newest update acted on
  std::mutex messages_mu_;
  // (timestamp, result) not yet checked; guarded by messages_mu_.
  std::deque<std::pair<int64_t, HostUpdateResult>> messages_;
};

// A state made of float buffers and integer counters the program owns
// (weights, optimizer slots, epoch, batch); they must outlive it and keep
// their sizes.
class TensorState : public State {
 public:
  void add(const std::string& name, std::vector<float>* values);
  void add_counter(const std::string& name, int64_t* value);

 protected:
  void save() override;
  void load() override;
  Status broadcast() override;

 private:
  struct Buffer {
    std::string name;
    std::vector<float>* live;
    std::vector<float> saved;
  };
  struct Counter {
    std::string name;
    int64_t* live;
    int64_t saved = 0;
  };
  std::vector<Buffer> buffers_;
  std::vector<Counter> counters_;
};

// Whether the job's hosts changed since this process joined (what commit()
// checks): an elastic job's launcher moved it to a new membership.
bool hosts_changed();

// The launcher's host updates (Horovod's worker notifications): it
// numbers them 1, 2, ... as it makes them.
struct HostUpdate {
  int64_t timestamp = 0;  // seconds since the epoch
  HostUpdateResult result = HostUpdateResult::kNoUpdate;
};
// How many the launcher has made so far (0 in a fixed job).
StatusOr<int> host_updates_announced();
// Update number `n`, waiting up to `wait` for it (nullopt when it has not
// come by then). FailedPrecondition outside init()/shutdown().
StatusOr<std::optional<HostUpdate>> wait_host_update(
    int n, std::chrono::milliseconds wait);

// Hands every host update made from its start on to `state`
// (on_hosts_updated), from a thread of its own, across resets, until
// destroyed (Horovod's WorkerNotificationManager). run() keeps one.
class HostUpdateListener {
 public:
  explicit HostUpdateListener(State& state);
  ~HostUpdateListener();
  HostUpdateListener(const HostUpdateListener&) = delete;
  HostUpdateListener& operator=(const HostUpdateListener&) = delete;

 private:
  void Loop();

  State& state_;
  std::mutex mu_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

// Whether `s`, returned by a collective, means a peer is gone (reset and
// go on) rather than a mistake in the program (mismatched tensors).
bool IsRecoverable(const Status& s);

// Syncs the state from rank 0 and calls train(state) until it returns Ok,
// resetting as described above on a recoverable failure (of the sync too)
// or a host change, at most `reset_limit` times
// (--reset-limit; 0: no limit). Any other error is returned as it is.
// hvd::init() must have been called.
Status run(State& state, const std::function<Status(State&)>& train,
           int reset_limit = 0);

}  // namespace hvd::elastic
