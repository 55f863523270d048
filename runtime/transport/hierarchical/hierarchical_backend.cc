#include "runtime/transport/hierarchical/hierarchical_backend.h"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace hvd::runtime {

std::vector<size_t> PipelinePieces(size_t count, size_t esize,
                                   size_t piece_bytes) {
  const size_t k =
      piece_bytes == 0 ? 1 : std::min(kMaxPieces, count * esize / piece_bytes);
  if (k < 2) return {0, count};
  std::vector<size_t> at;
  for (size_t i = 0; i <= k; ++i) at.push_back(count * i / k);
  return at;
}

namespace {

// The cross allreduces of pipelined allreduces, in the order posted, on a
// thread of its own. After a failure the later ones fail the same way
// without running (the cross backend is broken).
class CrossThread {
 public:
  explicit CrossThread(Backend& cross)
      : cross_(cross), thread_([this] { Loop(); }) {}
  ~CrossThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_.notify_all();
    thread_.join();
  }

  // How many were posted so far (a call waits on numbers from here on).
  uint64_t posted() {
    std::lock_guard<std::mutex> lock(mu_);
    return posted_;
  }
  void Post(void* data, size_t count, DataType type, ReduceOp op) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back({data, count, type, op});
      ++posted_;
    }
    work_.notify_one();
  }
  // Until the first `n` posted have run; the first failure, if any.
  Status WaitFor(uint64_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    finished_.wait(lock, [&] { return done_ >= n; });
    return failed_;
  }

 private:
  struct Job {
    void* data;
    size_t count;
    DataType type;
    ReduceOp op;
  };

  void Loop() {
    for (;;) {
      Job job;
      Status failed;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping
        job = jobs_.front();
        jobs_.pop_front();
        failed = failed_;
      }
      Status s = !failed.ok() ? failed
                 : job.count > 0
                     ? cross_.Allreduce(job.data, job.count, job.type, job.op)
                     : Status::Ok();
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!s.ok() && failed_.ok()) failed_ = s;
        ++done_;
      }
      finished_.notify_all();
    }
  }

  Backend& cross_;
  std::mutex mu_;
  std::condition_variable work_, finished_;
  std::deque<Job> jobs_;  // guarded by mu_
  uint64_t posted_ = 0;   // guarded by mu_
  uint64_t done_ = 0;     // guarded by mu_
  Status failed_;         // guarded by mu_
  bool stop_ = false;     // guarded by mu_
  std::thread thread_;    // last: starts once the rest is built
};

class HierarchicalBackend final : public Backend,
                                  public HierarchicalKnob,
                                  public TcpKnob {
 public:
  HierarchicalBackend(const HierarchicalOptions& o,
                      std::unique_ptr<Backend> flat,
                      std::unique_ptr<Backend> local,
                      std::unique_ptr<Backend> cross)
      : o_(o),
        flat_(std::move(flat)),
        local_(std::move(local)),
        cross_(std::move(cross)) {}

  Status Allreduce(void* data, size_t count, DataType type,
                   ReduceOp op) override {
    if (!o_.allreduce) return flat_->Allreduce(data, count, type, op);
    if (count == 0) return Status::Ok();
    const size_t esize = DataTypeSize(type);
    const std::vector<size_t> at = PipelinePieces(count, esize, o_.piece_bytes);
    if (at.size() == 2) {
      const Piece p = Cut(0, count, esize);
      uint8_t* d = static_cast<uint8_t*>(data);
      uint8_t* share = d + p.share_at * esize;
      HVD_RETURN_IF_ERROR(local_->Reducescatter(d, share, p.counts, type, op));
      if (p.counts[o_.local_rank] > 0) {
        HVD_RETURN_IF_ERROR(
            cross_->Allreduce(share, p.counts[o_.local_rank], type, op));
      }
      return local_->Allgatherv(share, d, p.bytes);
    }
    return Pipelined(static_cast<uint8_t*>(data), at, type, op);
  }

  Status Allgatherv(const void* in, void* out,
                    const std::vector<size_t>& bytes) override {
    if (!o_.allgather) return flat_->Allgatherv(in, out, bytes);
    // Ranks are numbered host by host: host h holds ranks
    // [h * L, (h + 1) * L), and its cross rank is h.
    const size_t n = static_cast<size_t>(o_.local_size);
    const size_t hosts = bytes.size() / n;
    std::vector<size_t> host_bytes(hosts, 0);
    for (size_t r = 0; r < bytes.size(); ++r) host_bytes[r / n] += bytes[r];
    // This host's block, from its ranks' pieces.
    const size_t host = static_cast<size_t>(o_.cross_rank);
    std::vector<size_t> local_bytes(bytes.begin() + host * n,
                                    bytes.begin() + (host + 1) * n);
    block_.resize(host_bytes[host]);
    HVD_RETURN_IF_ERROR(local_->Allgatherv(in, block_.data(), local_bytes));
    return cross_->Allgatherv(block_.data(), out, host_bytes);
  }

  Status Broadcast(void* data, size_t bytes, int root) override {
    return flat_->Broadcast(data, bytes, root);
  }
  Status Alltoallv(const void* in, const std::vector<size_t>& send_bytes,
                   void* out, const std::vector<size_t>& recv_bytes) override {
    return flat_->Alltoallv(in, send_bytes, out, recv_bytes);
  }
  Status Reducescatter(const void* in, void* out,
                       const std::vector<size_t>& counts, DataType type,
                       ReduceOp op) override {
    return flat_->Reducescatter(in, out, counts, type, op);
  }
  Status Barrier() override { return flat_->Barrier(); }
  void SetHierarchical(bool allreduce, bool allgather) override {
    o_.allreduce = allreduce;
    o_.allgather = allgather;
  }
  // The TCP parts: the flat ring and the cross one.
  void SetSeveralStreams(bool on) override {
    for (Backend* b : {flat_.get(), cross_.get()}) {
      if (auto* knob = dynamic_cast<TcpKnob*>(b)) {
        knob->SetSeveralStreams(on);
      }
    }
  }
  void SetWideCrossovers(bool on) override {
    for (Backend* b : {flat_.get(), cross_.get()}) {
      if (auto* knob = dynamic_cast<TcpKnob*>(b)) {
        knob->SetWideCrossovers(on);
      }
    }
  }

 private:
  // Elements [begin, end) of a buffer, split over the local ranks. This
  // rank's share stays where it lies in the buffer (element `share_at`):
  // the local reduce-scatter leaves it there, the cross allreduce works on
  // it in place and the local allgather sends it from there, so the local
  // phases copy only what the other local ranks need.
  struct Piece {
    size_t begin;
    std::vector<size_t> counts, bytes;  // by local rank
    size_t share_at;
  };
  Piece Cut(size_t begin, size_t end, size_t esize) const {
    const size_t n = static_cast<size_t>(o_.local_size), count = end - begin;
    Piece p{begin, std::vector<size_t>(n), std::vector<size_t>(n), begin};
    for (size_t l = 0; l < n; ++l) {
      p.counts[l] = count / n + (l < count % n ? 1 : 0);
      p.bytes[l] = p.counts[l] * esize;
      if (l < static_cast<size_t>(o_.local_rank)) p.share_at += p.counts[l];
    }
    return p;
  }

  // Piece i: local reduce-scatter, then its cross allreduce goes to the
  // thread, and the local allgather of piece i - 1 (whose cross allreduce
  // ran meanwhile) follows. Returns once every posted piece is done, so
  // no piece outlives the call even when one fails.
  Status Pipelined(uint8_t* data, const std::vector<size_t>& at, DataType type,
                   ReduceOp op) {
    const size_t esize = DataTypeSize(type);
    std::vector<Piece> pieces;
    for (size_t i = 0; i + 1 < at.size(); ++i) {
      pieces.push_back(Cut(at[i], at[i + 1], esize));
    }
    if (!cross_thread_) cross_thread_ = std::make_unique<CrossThread>(*cross_);
    const uint64_t base = cross_thread_->posted();
    auto gather = [&](size_t i) {
      const Piece& p = pieces[i];
      HVD_RETURN_IF_ERROR(cross_thread_->WaitFor(base + i + 1));
      return local_->Allgatherv(data + p.share_at * esize,
                                data + p.begin * esize, p.bytes);
    };
    Status s;
    size_t posted = 0;
    for (size_t i = 0; i < pieces.size() && s.ok(); ++i) {
      const Piece& p = pieces[i];
      uint8_t* share = data + p.share_at * esize;
      s = local_->Reducescatter(data + p.begin * esize, share, p.counts, type,
                                op);
      if (!s.ok()) break;
      cross_thread_->Post(share, p.counts[o_.local_rank], type, op);
      ++posted;
      if (i > 0) s = gather(i - 1);
    }
    if (s.ok()) s = gather(pieces.size() - 1);
    Status drained = cross_thread_->WaitFor(base + posted);
    return s.ok() ? drained : s;
  }

  HierarchicalOptions o_;
  std::unique_ptr<Backend> flat_, local_, cross_;
  std::vector<uint8_t> block_;
  // After cross_: it uses it, so it goes first.
  std::unique_ptr<CrossThread> cross_thread_;
};

}  // namespace

std::unique_ptr<Backend> MakeHierarchicalBackend(
    const HierarchicalOptions& options, std::unique_ptr<Backend> flat,
    std::unique_ptr<Backend> local, std::unique_ptr<Backend> cross) {
  return std::make_unique<HierarchicalBackend>(
      options, std::move(flat), std::move(local), std::move(cross));
}

}  // namespace hvd::runtime
