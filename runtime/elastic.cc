#include "hvd/elastic.h"

#include "common/logging.h"
#include "runtime/context.h"

namespace hvd {
// The job's membership epoch as the rendezvous publishes it, compared with
// the generation this process joined (hvd.cc).
bool hosts_changed_since_join();
}  // namespace hvd

namespace hvd::elastic {

Status State::commit() {
  save();
  saved_ = true;
  return check_host_updates();
}

void State::on_hosts_updated(int64_t timestamp, HostUpdateResult result) {
  std::lock_guard<std::mutex> lock(messages_mu_);
  messages_.emplace_back(timestamp, result);
}

Status State::check_host_updates() {
  // As Horovod's: the updates newer than the last acted on, merged.
  int64_t last = last_updated_timestamp_;
  int update = 0;
  {
    std::lock_guard<std::mutex> lock(messages_mu_);
    for (const auto& [timestamp, result] : messages_) {
      if (timestamp > last) {
        last = timestamp;
        update |= static_cast<int>(result);
      }
    }
    messages_.clear();
  }
  int64_t decided[3] = {last > last_updated_timestamp_ ? 1 : 0, update, last};
  if (!decided[0] && rank() == 0 && hosts_changed_since_join()) {
    // A new membership whose update was not (yet) heard: what changed is
    // not told, so the state is synced. (Asked only then: it is a call to
    // the rendezvous.)
    decided[0] = 1;
    decided[1] = static_cast<int>(HostUpdateResult::kMixed);
  }
  // Rank 0's view decides for every rank, so all reset at the same check.
  // Named by the checks since the last sync, which every rank counts alike.
  HVD_RETURN_IF_ERROR(
      broadcast_async("hvd.elastic.commit." + std::to_string(commits_++),
                      Tensor{decided, DataType::kInt64, {3}}, 0)
          .wait());
  last_updated_timestamp_ = decided[2];
  if (decided[0]) {
    hosts_updated_ = true;
    only_removed_ = decided[1] == static_cast<int>(HostUpdateResult::kRemoved);
    return Status::Aborted("hvd::elastic::State::commit",
                           "the job's hosts changed; resetting to them");
  }
  return Status::Ok();
}

void State::restore() {
  if (saved_) load();
}

Status State::sync() {
  commits_ = 0;
  HVD_RETURN_IF_ERROR(broadcast());
  // Every rank now holds rank 0's state: that is the point to come back to.
  save();
  saved_ = true;
  return Status::Ok();
}

void State::register_reset_callback(std::function<void()> callback) {
  callbacks_.push_back(std::move(callback));
}

bool State::take_hosts_updated() {
  bool was = hosts_updated_;
  hosts_updated_ = false;
  return was;
}

void State::on_reset() {
  {
    std::lock_guard<std::mutex> lock(messages_mu_);
    messages_.clear();
  }
  for (auto& cb : callbacks_) cb();
}

void TensorState::add(const std::string& name, std::vector<float>* values) {
  buffers_.push_back({name, values, *values});
}

void TensorState::add_counter(const std::string& name, int64_t* value) {
  counters_.push_back({name, value, *value});
}

void TensorState::save() {
  for (Buffer& b : buffers_) b.saved = *b.live;
  for (Counter& c : counters_) c.saved = *c.live;
}

void TensorState::load() {
  for (Buffer& b : buffers_) *b.live = b.saved;
  for (Counter& c : counters_) *c.live = c.saved;
}

Status TensorState::broadcast() {
  std::vector<Handle> handles;
  for (Buffer& b : buffers_) {
    handles.push_back(
        broadcast_async("elastic.state." + b.name,
                        Tensor{b.live->data(),
                               DataType::kFloat32,
                               {static_cast<int64_t>(b.live->size())}},
                        0));
  }
  std::vector<int64_t> counters;
  for (Counter& c : counters_) counters.push_back(*c.live);
  if (!counters.empty()) {
    handles.push_back(
        broadcast_async("elastic.state.counters",
                        Tensor{counters.data(),
                               DataType::kInt64,
                               {static_cast<int64_t>(counters.size())}},
                        0));
  }
  Status failed;
  for (Handle& h : handles) failed.Update(h.wait());
  HVD_RETURN_IF_ERROR(failed);
  for (size_t i = 0; i < counters_.size(); ++i) {
    *counters_[i].live = counters[i];
  }
  return Status::Ok();
}

bool hosts_changed() { return hosts_changed_since_join(); }

bool IsRecoverable(const Status& s) {
  return s.code() == StatusCode::kUnavailable ||
         s.code() == StatusCode::kAborted ||
         s.code() == StatusCode::kDeadlineExceeded;
}

Status run(State& state, const std::function<Status(State&)>& train,
           int reset_limit) {
  if (!is_initialized()) {
    return Status::FailedPrecondition("hvd::elastic::run",
                                      "call hvd::init() first");
  }
  // Every rank starts from rank 0's state, as after a reset. The sync is a
  // collective like any other: a peer lost during it (killed as the job
  // starts or resets) is a reset too, as in Horovod, not the end of run().
  HostUpdateListener listener(state);
  bool skip_sync = false;
  for (int resets = 0;; ++resets) {
    Status s = skip_sync ? Status::Ok() : state.sync();
    if (s.ok()) s = train(state);
    if (s.ok()) return s;
    const bool hosts = state.take_hosts_updated();
    skip_sync = hosts && state.hosts_only_removed();
    if (!hosts && !IsRecoverable(s)) return s;
    if (reset_limit > 0 && resets >= reset_limit) {
      return Status::Aborted(
          "hvd::elastic::run",
          "gave up after " + std::to_string(resets) +
              " resets (--reset-limit); the last: " + s.ToString());
    }
    HVD_LOG(Warning) << (hosts ? "hosts changed" : s.ToString())
                     << "; resetting (" << resets + 1 << ")";
    if (!hosts) state.restore();
    (void)shutdown();
    HVD_RETURN_IF_ERROR(init());
    state.on_reset();
  }
}

}  // namespace hvd::elastic
