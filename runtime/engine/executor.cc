#include "runtime/engine/executor.h"

#include <algorithm>
#include <cstring>

#include "common/copy_bytes.h"
#include "runtime/timeline.h"
#include "runtime/transport/shm/shm_heap.h"

namespace hvd::runtime {
namespace {

// Where an output of `bytes` and `shape` goes: the caller's allocation, or
// out->data. Null when the caller's allocation failed.
uint8_t* OutputBuffer(Output* out, size_t bytes, std::vector<int64_t> shape) {
  out->shape = std::move(shape);
  if (!out->allocate) {
    out->data.resize(bytes);
    return out->data.data();
  }
  out->data.clear();
  return static_cast<uint8_t*>(out->allocate(bytes, out->shape));
}

Status NoOutput(const Request& r, size_t bytes) {
  return Status::ResourceExhausted(
      "tensor '" + r.name + "'",
      "the output allocation of " + std::to_string(bytes) + " bytes failed");
}

int64_t Rows(const Request& r) {
  return r.shape.empty() ? r.count : r.shape[0];
}

int64_t RowElems(const Request& r) {
  int64_t n = 1;
  for (size_t i = 1; i < r.shape.size(); ++i) n *= r.shape[i];
  return n;
}

// The shape of `r` with a first dimension of `rows`.
std::vector<int64_t> WithRows(const Request& r, int64_t rows) {
  std::vector<int64_t> shape =
      r.shape.empty() ? std::vector<int64_t>{0} : r.shape;
  shape[0] = rows;
  return shape;
}

}  // namespace

Executor::Executor(int rank, int size, BackendSet* backends, Timeline* timeline)
    : rank_(rank),
      size_(size),
      backends_(backends),
      timeline_(timeline),
      adasum_(rank, size) {}

Executor::~Executor() {
  if (fusion_shared_) (void)ShmHeap::Process().Free(fusion_);
}

uint8_t* Executor::FusionBuffer(size_t bytes) {
  if (bytes <= fusion_bytes_) return fusion_;
  const size_t want = std::max(bytes, 2 * fusion_bytes_);
  if (fusion_shared_) (void)ShmHeap::Process().Free(fusion_);
  fusion_shared_ = false;
  if (StatusOr<void*> p = ShmHeap::Process().Allocate(want); p.ok()) {
    fusion_ = static_cast<uint8_t*>(*p);
    fusion_shared_ = true;
    fallback_ = {};
  } else {
    fallback_.resize(want);
    fusion_ = fallback_.data();
  }
  fusion_bytes_ = want;
  return fusion_;
}

// Timeline events of one executed group: its operations start on
// construction and end on destruction; Begin/End mark the phases between.
class Executor::Phases {
 public:
  Phases(Timeline* tl, const std::vector<Pending*>& group,
         std::string_view prefix)
      : tl_(tl && tl->enabled() ? tl : nullptr),
        group_(group),
        prefix_(prefix) {
    if (!tl_) return;
    for (Pending* p : group_) {
      tl_->Start(p->request.name, OpTypeName(p->request.type));
    }
  }
  ~Phases() {
    if (!tl_) return;
    for (Pending* p : group_) tl_->End(p->request.name);
  }
  // A phase named as it is ("MEMCPY_IN_FUSION_BUFFER").
  void Begin(const char* activity) {
    if (!tl_) return;
    for (Pending* p : group_) tl_->ActivityStart(p->request.name, activity);
  }
  // The collective itself, named for the backend's kind ("ALLREDUCE").
  void BeginOp(const char* op) {
    if (tl_) Begin((std::string(prefix_) + op).c_str());
  }
  void End() {
    if (!tl_) return;
    for (Pending* p : group_) tl_->ActivityEnd(p->request.name);
  }

 private:
  Timeline* const tl_;  // null: not tracing
  const std::vector<Pending*>& group_;
  const std::string_view prefix_;
};

StatusOr<uint64_t> Executor::Run(const std::vector<Pending*>& group) {
  const Request& r0 = group.front()->request;
  Backend* backend = &backends_->host();
  if (r0.device >= 0) {
    HVD_ASSIGN_OR_RETURN(backend, backends_->Device(r0.device, rank_));
  }
  Status status;
  {
    Phases phases(timeline_, group, backends_->activity_prefix(r0.device >= 0));
    Pending& p = *group.front();
    switch (r0.type) {
      case OpType::kAllgather:
        status = Allgather(*backend, p, phases);
        break;
      case OpType::kReducescatter:
        status = Reducescatter(*backend, p, phases);
        break;
      case OpType::kAlltoall:
        status = Alltoall(*backend, p, phases);
        break;
      case OpType::kBroadcast:
        status = Broadcast(*backend, p, phases);
        break;
      default:
        status = Allreduce(*backend, group, phases);
        break;
    }
  }
  if (!status.ok()) return status;
  uint64_t bytes = 0;
  if (r0.type == OpType::kAllreduce) {
    for (Pending* p : group) {
      bytes += static_cast<uint64_t>(p->request.count) * DataTypeSize(r0.dtype);
    }
  }
  return bytes;
}

Status Executor::Allgather(Backend& backend, Pending& p, Phases& phases) {
  const Request& r0 = p.request;
  const size_t esize = DataTypeSize(r0.dtype);
  // counts: every rank's first dimension.
  const int64_t row = RowElems(r0);
  std::vector<size_t> bytes;
  size_t total = 0;
  int64_t rows = 0;
  for (int64_t c : p.counts) {
    bytes.push_back(static_cast<size_t>(c * row) * esize);
    total += bytes.back();
    rows += c;
  }
  uint8_t* dst = OutputBuffer(p.out, total, WithRows(r0, rows));
  if (!dst && total > 0) return NoOutput(r0, total);
  phases.BeginOp("ALLGATHER");
  Status s = backend.Allgatherv(p.data, dst, bytes);
  phases.End();
  return s;
}

Status Executor::Reducescatter(Backend& backend, Pending& p, Phases& phases) {
  const Request& r0 = p.request;
  const size_t esize = DataTypeSize(r0.dtype);
  const int64_t n = size_;
  const int64_t rows = Rows(r0), row = RowElems(r0);
  std::vector<size_t> counts(n);
  for (int64_t r = 0; r < n; ++r) {
    counts[r] = static_cast<size_t>((rows / n + (r < rows % n ? 1 : 0)) * row);
  }
  uint8_t* dst = OutputBuffer(p.out, counts[rank_] * esize,
                              WithRows(r0, rows / n + (rank_ < rows % n)));
  if (!dst && counts[rank_] > 0) return NoOutput(r0, counts[rank_] * esize);
  std::vector<uint8_t> scaled;
  const void* in = p.data;
  if (r0.prescale != 1.0) {
    scaled.assign(static_cast<const uint8_t*>(p.data),
                  static_cast<const uint8_t*>(p.data) + r0.count * esize);
    ScaleBuffer(r0.dtype, scaled.data(), r0.count, r0.prescale);
    in = scaled.data();
  }
  phases.BeginOp("REDUCESCATTER");
  Status s = backend.Reducescatter(in, dst, counts, r0.dtype, r0.reduce);
  phases.End();
  double post = r0.postscale * (r0.average ? 1.0 / n : 1.0);
  if (s.ok() && post != 1.0) ScaleBuffer(r0.dtype, dst, counts[rank_], post);
  return s;
}

Status Executor::Alltoall(Backend& backend, Pending& p, Phases& phases) {
  const Request& r0 = p.request;
  const size_t esize = DataTypeSize(r0.dtype);
  // Every rank's splits travelled in the negotiation: what rank q sends
  // here is splits_q[me] rows.
  const int64_t row = RowElems(r0);
  std::vector<size_t> send, recv;
  size_t total = 0;
  int64_t rows = 0;
  p.out->received_splits.clear();
  for (int64_t v : r0.splits) {
    send.push_back(static_cast<size_t>(v * row) * esize);
  }
  for (const auto& sp : p.all_splits) {
    recv.push_back(static_cast<size_t>(sp[rank_] * row) * esize);
    total += recv.back();
    rows += sp[rank_];
    p.out->received_splits.push_back(sp[rank_]);
  }
  uint8_t* dst = OutputBuffer(p.out, total, WithRows(r0, rows));
  if (!dst && total > 0) return NoOutput(r0, total);
  phases.BeginOp("ALLTOALL");
  Status s = backend.Alltoallv(p.data, send, dst, recv);
  phases.End();
  return s;
}

Status Executor::Broadcast(Backend& backend, Pending& p, Phases& phases) {
  const Request& r0 = p.request;
  phases.BeginOp("BROADCAST");
  Status s = backend.Broadcast(
      p.data, static_cast<size_t>(r0.count) * DataTypeSize(r0.dtype), r0.root);
  phases.End();
  return s;
}

Status Executor::Allreduce(Backend& backend, const std::vector<Pending*>& group,
                           Phases& phases) {
  const Request& r0 = group.front()->request;
  const size_t esize = DataTypeSize(r0.dtype);
  const bool fused = group.size() > 1;
  const double post = r0.postscale * (r0.average ? 1.0 / size_ : 1.0);
  size_t total = 0;
  for (Pending* q : group) total += static_cast<size_t>(q->request.count);
  void* buffer = group.front()->data;
  if (r0.device >= 0) {
    // Device memory: the backend scales (Sum only, checked at enqueue).
    phases.BeginOp("ALLREDUCE");
    Status s =
        r0.prescale * post == 1.0
            ? backend.Allreduce(buffer, total, r0.dtype, r0.reduce)
            : backend.ScaledSum(buffer, total, r0.dtype, r0.prescale * post);
    phases.End();
    return s;
  }
  // A fused group's tensors, end to end.
  pieces_.clear();
  for (size_t i = 0; fused && i < group.size(); ++i) {
    pieces_.push_back(
        {group[i]->data, static_cast<size_t>(group[i]->request.count)});
  }
  if (fused && !r0.adasum && backend.ReducesPieces()) {
    // The backend reduces the tensors where they lie: no fusion buffer.
    // (A prescale may change the inputs: they are overwritten anyway.)
    if (r0.prescale != 1.0) {
      for (const Piece& q : pieces_) {
        ScaleBuffer(r0.dtype, q.data, q.count, r0.prescale);
      }
    }
    phases.BeginOp("ALLREDUCE");
    Status s = backend.AllreducePieces(pieces_, r0.dtype, r0.reduce, post);
    phases.End();
    return s;
  }
  if (fused) {
    // Fuse: pack every tensor into one buffer, one call, unpack.
    phases.Begin("MEMCPY_IN_FUSION_BUFFER");
    buffer = FusionBuffer(total * esize);
    PackPieces(pieces_, esize, static_cast<uint8_t*>(buffer));
    phases.End();
  }
  if (r0.prescale != 1.0) ScaleBuffer(r0.dtype, buffer, total, r0.prescale);
  Status s;
  if (r0.adasum) {
    phases.BeginOp("ADASUM_ALLREDUCE");
    std::vector<size_t> counts;
    for (Pending* q : group) counts.push_back(q->request.count);
    s = adasum_.Allreduce(backend, buffer, r0.dtype, counts);
    if (s.ok() && post != 1.0) ScaleBuffer(r0.dtype, buffer, total, post);
  } else {
    phases.BeginOp("ALLREDUCE");
    s = backend.AllreduceScaled(buffer, total, r0.dtype, r0.reduce, post);
  }
  phases.End();
  if (!s.ok() || !fused) return s;
  phases.Begin("MEMCPY_OUT_FUSION_BUFFER");
  UnpackPieces(pieces_, esize, fusion_);
  phases.End();
  return Status::Ok();
}

uint64_t Executor::ReduceEager(Pending* p,
                               const std::vector<std::string_view>& from) {
  const Request& r = p->request;
  // Only while tracing: the steady state allocates nothing here.
  std::vector<Pending*> traced;
  if (timeline_ && timeline_->enabled()) traced.push_back(p);
  Phases phases(timeline_, traced, "");
  phases.Begin("LOCAL_REDUCE");
  const uint64_t reduced = ReduceEager(r, p->data, from);
  phases.End();
  return reduced;
}

uint64_t Executor::ReduceEager(const Request& r, void* data,
                               const std::vector<std::string_view>& from) {
  const size_t bytes = static_cast<size_t>(r.count) * DataTypeSize(r.dtype);
  // Every rank adds the same contributions (each rank's data, or a group's
  // already reduced where messages merged on the way: eager_merge.h) in
  // the same (rank) order, so every rank ends with the same bits. This rank's own data came along
  // in its message, so the result may be built in its buffer; the others'
  // are copied out first (a message's bytes need not be aligned).
  if (bytes == 0) return 0;
  uint8_t* acc = static_cast<uint8_t*>(data);
  CopyBytes(acc, from[0].data(), bytes);
  if (r.prescale != 1.0) ScaleBuffer(r.dtype, acc, r.count, r.prescale);
  const double post = r.postscale * (r.average ? 1.0 / size_ : 1.0);
  if (from.size() == 1 && post != 1.0) ScaleBuffer(r.dtype, acc, r.count, post);
  for (size_t q = 1; q < from.size(); ++q) {
    if (r.prescale == 1.0 && post == 1.0 &&
        AddFewFloats(r.dtype, r.reduce, acc, from[q].data(), r.count)) {
      continue;
    }
    eager_next_.resize(bytes);
    CopyBytes(eager_next_.data(), from[q].data(), bytes);
    if (r.prescale != 1.0) {
      ScaleBuffer(r.dtype, eager_next_.data(), r.count, r.prescale);
    }
    ReduceScaleBuffers(r.dtype, r.reduce, acc, acc, eager_next_.data(), r.count,
                       q + 1 == from.size() ? post : 1.0);
  }
  return bytes;
}

}  // namespace hvd::runtime
