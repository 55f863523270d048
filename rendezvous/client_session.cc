#include "rendezvous/client_session.h"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "rendezvous/grpc_status.h"

namespace hvd::rendezvous {

namespace pb = ::hvd::rendezvous::v1;

class ClientSession::Reactor final
    : public grpc::ClientBidiReactor<pb::SessionRequest, pb::SessionResponse> {
 public:
  Reactor(pb::Rendezvous::Stub* stub, const std::string& job_id,
          const std::string& token, std::string where)
      : where_(std::move(where)) {
    ctx_.AddMetadata(kJobIdMetadata, job_id);
    ctx_.AddMetadata(kJobTokenMetadata, token);
    stub->async()->Session(&ctx_, this);
    // Held until no write can start any more, so OnDone never races a
    // StartWrite that Submit has decided on.
    AddHold();
    StartRead(&response_);
    StartCall();
  }

  void Submit(pb::Op op, Callback done) {
    bool write = false;
    std::optional<pb::OpResult> failed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ended_) {
        failed.emplace();
        failed->set_code(static_cast<int32_t>(end_status_.code()));
        failed->set_message(end_status_.message());
      } else {
        op.set_id(next_id_++);
        callbacks_.emplace(op.id(), std::move(done));
        outbox_.push_back(std::move(op));
        if (!writing_ && !read_ended_) {
          TakeOutboxLocked();
          write = true;
        }
      }
    }
    if (failed) return done(*failed);
    if (write) StartWrite(&request_);
  }

  void OnWriteDone(bool ok) override {
    bool write = false, release = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
      if (ok && !read_ended_ && !outbox_.empty()) {
        TakeOutboxLocked();
        write = true;
      } else if (read_ended_) {
        release = ReleaseHoldLocked();
      }
    }
    if (write) StartWrite(&request_);
    if (release) RemoveHold();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The stream is over: start no more writes, and let OnDone come (with
      // the status) as soon as no write is in flight.
      bool release;
      {
        std::lock_guard<std::mutex> lock(mu_);
        read_ended_ = true;
        release = !writing_ && ReleaseHoldLocked();
      }
      if (release) RemoveHold();
      return;
    }
    std::vector<std::pair<Callback, pb::OpResult*>> ready;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (pb::OpResult& r : *response_.mutable_results()) {
        auto it = callbacks_.find(r.id());
        if (it == callbacks_.end()) continue;
        ready.emplace_back(std::move(it->second), &r);
        callbacks_.erase(it);
      }
    }
    for (auto& [cb, r] : ready) cb(*r);
    response_.Clear();
    StartRead(&response_);
  }

  void OnDone(const grpc::Status& s) override {
    std::unordered_map<uint64_t, Callback> pending;
    Status end = FromGrpcStatus(s, where_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      // A stream the server ended (shutting down for a restart) is like
      // one that broke: its ops are worth sending again. Only a stream
      // this client cancels is over for good.
      if (end.ok() || (end.code() == StatusCode::kCancelled && !cancelling_)) {
        end = Status::Unavailable(where_, "the server ended the session");
      }
      ended_ = true;
      end_status_ = end;
      pending.swap(callbacks_);
    }
    pb::OpResult failed;
    failed.set_code(static_cast<int32_t>(end.code()));
    failed.set_message(end.message());
    for (auto& [id, cb] : pending) {
      failed.set_id(id);
      cb(failed);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    done_cv_.notify_all();
  }

  bool ended() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ended_;
  }

  void CancelAndWait() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cancelling_ = true;
    }
    ctx_.TryCancel();
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [this] { return done_; });
  }

 private:
  bool ReleaseHoldLocked() {
    if (hold_released_) return false;
    hold_released_ = true;
    return true;
  }

  void TakeOutboxLocked() {
    request_.Clear();
    for (pb::Op& op : outbox_) request_.add_ops()->Swap(&op);
    outbox_.clear();
    writing_ = true;
  }

  const std::string where_;
  grpc::ClientContext ctx_;
  pb::SessionRequest request_;    // in flight while writing_
  pb::SessionResponse response_;  // owned by the read in flight
  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  std::vector<pb::Op> outbox_;                        // guarded by mu_
  std::unordered_map<uint64_t, Callback> callbacks_;  // guarded by mu_
  uint64_t next_id_ = 1;                              // guarded by mu_
  bool writing_ = false;                              // guarded by mu_
  bool read_ended_ = false;                           // guarded by mu_
  bool hold_released_ = false;                        // guarded by mu_
  bool ended_ = false;                                // guarded by mu_
  Status end_status_;                                 // guarded by mu_
  bool done_ = false;                                 // guarded by mu_
  bool cancelling_ = false;                           // guarded by mu_
};

ClientSession::ClientSession(pb::Rendezvous::Stub* stub,
                             const std::string& job_id,
                             const std::string& job_token, std::string where)
    : reactor_(std::make_unique<Reactor>(stub, job_id, job_token,
                                         std::move(where))) {}

ClientSession::~ClientSession() { reactor_->CancelAndWait(); }

void ClientSession::Submit(pb::Op op, Callback done) {
  reactor_->Submit(std::move(op), std::move(done));
}

bool ClientSession::ended() const { return reactor_->ended(); }

Status ResultStatus(const pb::OpResult& result, const std::string& where) {
  if (result.code() == 0) return Status::Ok();
  const std::string& m = result.message();
  // Errors of the stream already name the server.
  if (m.rfind(where, 0) == 0) {
    return Status(static_cast<StatusCode>(result.code()), m);
  }
  return Status(static_cast<StatusCode>(result.code()), where + ": " + m);
}

}  // namespace hvd::rendezvous
