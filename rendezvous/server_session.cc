#include "rendezvous/server_session.h"

#include <memory>
#include <mutex>
#include <unordered_map>

#include "rendezvous/grpc_status.h"
#include "rendezvous/service_util.h"

namespace hvd::rendezvous {
namespace {

namespace pb = ::hvd::rendezvous::v1;

// Reads ops, runs each against the table, and writes results as they are
// ready: whatever accumulates while a write is in flight goes out together
// in the next one.
//
// Lifetime: completions of blocked ops may arrive from any thread, even as
// the stream ends, so they reach the reactor through `State`, which they
// share. Once the reactor has called Finish, late results are dropped;
// OnDone cancels what is still pending and deletes the reactor.
class SessionReactor final
    : public grpc::ServerBidiReactor<pb::SessionRequest, pb::SessionResponse> {
 public:
  SessionReactor(JobTable* table, Expirer* expirer, ServerStats* stats,
                 std::string job_id)
      : table_(table),
        expirer_(expirer),
        stats_(stats),
        job_id_(std::move(job_id)),
        state_(std::make_shared<State>()) {
    state_->reactor = this;
  }

  void Begin(const Status& auth) {
    if (!auth.ok()) {
      {
        std::lock_guard<std::mutex> lock(state_->mu);
        state_->finished = true;
      }
      Finish(ToGrpcStatus(auth));
      return;
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The client closed its side (or went away): finish once the results
      // of what it asked are written.
      bool finish = false;
      {
        std::lock_guard<std::mutex> lock(state_->mu);
        state_->read_done = true;
        finish = MaybeFinishLocked();
      }
      if (finish) Finish(grpc::Status::OK);
      return;
    }
    // Results that are ready at once go out together, in one message.
    std::vector<pb::OpResult> ready;
    ready.reserve(request_.ops_size());
    for (const pb::Op& op : request_.ops()) Dispatch(op, ready);
    if (!ready.empty()) DeliverDurably(table_, state_, std::move(ready));
    request_.Clear();
    StartRead(&request_);
  }

  void OnWriteDone(bool ok) override {
    bool write = false, finish = false;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->writing = false;
      if (!ok) {
        state_->broken = true;
      } else if (!state_->outbox.empty() && !state_->finished) {
        TakeOutboxLocked();
        write = true;
      }
      if (!write) finish = MaybeFinishLocked();
    }
    if (write) StartWrite(&response_);
    if (finish) Finish(grpc::Status::OK);
  }

  void OnCancel() override {
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->broken = true;
      finish = MaybeFinishLocked();
    }
    if (finish) Finish(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    std::unordered_map<uint64_t, JobTable::WaitId> pending;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->reactor = nullptr;
      pending.swap(state_->pending);
    }
    for (const auto& [op, id] : pending) table_->CancelWait(id);
    delete this;
  }

 private:
  struct State {
    std::mutex mu;
    SessionReactor* reactor = nullptr;  // null once done
    std::vector<pb::OpResult> outbox;
    // Blocked ops: op id -> the table's wait id (0 until known).
    std::unordered_map<uint64_t, JobTable::WaitId> pending;
    bool writing = false;
    bool read_done = false;
    bool broken = false;    // cancelled, or a write failed
    bool finished = false;  // Finish was called (or is about to be)
  };

  // Whether to call Finish now; marks it called. `state_->mu` held.
  bool MaybeFinishLocked() {
    if (state_->finished || state_->writing) return false;
    bool idle = state_->outbox.empty() && state_->pending.empty();
    if (state_->broken || (state_->read_done && idle)) {
      state_->finished = true;
      return true;
    }
    return false;
  }

  void TakeOutboxLocked() {
    response_.Clear();
    for (pb::OpResult& r : state_->outbox) response_.add_results()->Swap(&r);
    state_->outbox.clear();
    state_->writing = true;
  }

  // Delivers once the table's changes so far are durable (table_record.h),
  // or with the store's error in every result when they cannot be.
  static void DeliverDurably(const JobTable* table,
                             const std::shared_ptr<State>& state,
                             std::vector<pb::OpResult> results) {
    auto held = std::make_shared<std::vector<pb::OpResult>>(std::move(results));
    table->WhenDurable([state, held](const Status& durable) {
      if (!durable.ok()) {
        for (pb::OpResult& r : *held) SetResultStatus(&r, durable);
      }
      Deliver(state, std::move(*held));
    });
  }

  static void DeliverDurably(const JobTable* table,
                             const std::shared_ptr<State>& state,
                             pb::OpResult result) {
    std::vector<pb::OpResult> one;
    one.push_back(std::move(result));
    DeliverDurably(table, state, std::move(one));
  }

  // Queues a result; starts a write when none is in flight. Safe from any
  // thread, and after the stream ended (the result is then dropped).
  static void Deliver(const std::shared_ptr<State>& state,
                      pb::OpResult result) {
    std::vector<pb::OpResult> one;
    one.push_back(std::move(result));
    Deliver(state, std::move(one));
  }

  static void Deliver(const std::shared_ptr<State>& state,
                      std::vector<pb::OpResult> results) {
    SessionReactor* reactor = nullptr;
    SessionReactor* finisher = nullptr;
    {
      std::lock_guard<std::mutex> lock(state->mu);
      for (const pb::OpResult& r : results) state->pending.erase(r.id());
      if (state->reactor == nullptr || state->finished) return;
      if (state->outbox.empty()) {
        state->outbox = std::move(results);
      } else {
        for (pb::OpResult& r : results) state->outbox.push_back(std::move(r));
      }
      if (!state->writing && !state->broken) {
        state->reactor->TakeOutboxLocked();
        reactor = state->reactor;
      } else if (state->reactor->MaybeFinishLocked()) {
        finisher = state->reactor;
      }
    }
    // Finish was marked under the lock, so OnDone cannot have run yet.
    if (reactor) reactor->StartWrite(&reactor->response_);
    if (finisher) finisher->Finish(grpc::Status::OK);
  }

  // Runs one op; a result that is ready at once is appended to `ready`.
  void Dispatch(const pb::Op& op, std::vector<pb::OpResult>& ready) {
    const auto start = Clock::now();
    std::optional<pb::OpResult> result = RunImmediateOp(*table_, job_id_, op);
    if (!result) {
      switch (op.kind_case()) {
        case pb::Op::kJoin:
          return DispatchJoin(op.id(), op.join(), start);
        case pb::Op::kWait:
          return DispatchWait(op.id(), op.wait(), start);
        case pb::Op::kBarrier:
          return DispatchBarrier(op.id(), op.barrier(), start);
        default:
          return;  // RunImmediateOp answers every other kind
      }
    }
    // Answered now (blocking ops count when their callback answers).
    Answered(stats_, OpMethod(op),
             Status(static_cast<StatusCode>(result->code()), result->message()),
             start);
    ready.push_back(std::move(*result));
  }

  // Runs a blocking op. Its id is pending from before the table call (which
  // may answer at once, inline) until its result is delivered; the table's
  // wait id is recorded for OnDone to cancel. OnDone cannot run meanwhile:
  // this runs inside OnReadDone, and reactions never overlap OnDone.
  template <typename Register>
  void Block(uint64_t op_id, const StatusOr<Clock::time_point>& deadline,
             Register&& reg) {
    if (!deadline.ok()) {
      pb::OpResult result;
      result.set_id(op_id);
      SetResultStatus(&result, deadline.status());
      return Deliver(state_, std::move(result));
    }
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->pending[op_id] = 0;
    }
    JobTable::WaitId id = reg(*deadline);
    if (id == 0) return;
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->pending.find(op_id);
    if (it != state_->pending.end()) it->second = id;
    expirer_->Kick();
  }

  void DispatchJoin(uint64_t op_id, const pb::JoinRequest& req,
                    Clock::time_point start) {
    Block(op_id, DeadlineFrom(req.timeout_ms()),
          [&](Clock::time_point deadline) {
            return table_->JoinWait(
                job_id_, req.host(), req.slot(), req.previous_generation(),
                deadline,
                [table = table_, state = state_, op_id, stats = stats_,
                 start](StatusOr<Assignment> a) {
                  Answered(stats, "join", a.status(), start);
                  pb::OpResult result;
                  result.set_id(op_id);
                  if (a.ok())
                    AssignmentToProto(*a, result.mutable_assignment());
                  SetResultStatus(&result, a.status());
                  DeliverDurably(table, state, std::move(result));
                });
          });
  }

  static void Answered(ServerStats* stats, const char* method, const Status& s,
                       Clock::time_point start) {
    stats->Record(method, s,
                  std::chrono::duration<double>(Clock::now() - start).count());
  }

  static const char* OpMethod(const pb::Op& op) {
    switch (op.kind_case()) {
      case pb::Op::kJoin:
        return "join";
      case pb::Op::kSet:
        return "set";
      case pb::Op::kGet:
        return "get";
      case pb::Op::kWait:
        return "wait";
      case pb::Op::kBarrier:
        return "barrier";
      case pb::Op::KIND_NOT_SET:
        break;
    }
    return "unknown";
  }

  void DispatchWait(uint64_t op_id, const pb::WaitRequest& req,
                    Clock::time_point start) {
    std::vector<std::string> keys(req.keys().begin(), req.keys().end());
    Block(op_id, DeadlineFrom(req.timeout_ms()),
          [&](Clock::time_point deadline) {
            return table_->Wait(
                job_id_, std::move(keys), deadline,
                [table = table_, state = state_, op_id, stats = stats_,
                 start](StatusOr<std::vector<std::string>> values) {
                  Answered(stats, "wait", values.status(), start);
                  pb::OpResult result;
                  result.set_id(op_id);
                  if (values.ok()) {
                    for (std::string& v : *values) {
                      result.mutable_wait()->add_values(std::move(v));
                    }
                  }
                  SetResultStatus(&result, values.status());
                  DeliverDurably(table, state, std::move(result));
                });
          });
  }

  void DispatchBarrier(uint64_t op_id, const pb::BarrierRequest& req,
                       Clock::time_point start) {
    Block(op_id, DeadlineFrom(req.timeout_ms()),
          [&](Clock::time_point deadline) {
            return table_->Barrier(
                job_id_, req.name(), req.rank(), deadline,
                [table = table_, state = state_, op_id, stats = stats_,
                 start](Status s) {
                  Answered(stats, "barrier", s, start);
                  pb::OpResult result;
                  result.set_id(op_id);
                  SetResultStatus(&result, s);
                  DeliverDurably(table, state, std::move(result));
                },
                req.entry());
          });
  }

  JobTable* table_;
  Expirer* expirer_;
  ServerStats* stats_;
  std::string job_id_;
  std::shared_ptr<State> state_;
  pb::SessionRequest request_;
  pb::SessionResponse response_;
};

}  // namespace

grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionResponse>*
NewSessionReactor(JobTable* table, Expirer* expirer, ServerStats* stats,
                  std::string job_id, const Status& auth) {
  auto* reactor = new SessionReactor(table, expirer, stats, std::move(job_id));
  reactor->Begin(auth);
  return reactor;
}

}  // namespace hvd::rendezvous
