#include "runtime/transport/tcp/tcp_ring.h"

#include <algorithm>
#include <cstring>

namespace hvd::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// The chain broadcast's piece (Chain).
constexpr size_t kChainPiece = 256 << 10;

// Where a block lies in the buffer, in bytes.
struct Span {
  size_t at, bytes;
};

// Block b of `count` elements split over n ranks: [begin, end).
size_t BlockBegin(size_t count, int n, int b) {
  const size_t base = count / n, extra = count % n;
  return b * base + std::min<size_t>(b, extra);
}

}  // namespace

StatusOr<std::unique_ptr<TcpRing>> TcpRing::Connect(
    const TcpRingOptions& options, Store& store) {
  // The ring's neighbours, and the doubling's partners where small buffers
  // take it: 2 + log2(n) peers, not n - 1.
  const int n = options.size, me = options.rank;
  std::vector<int> peers = {(me + n - 1) % n, (me + 1) % n};
  if (options.crossovers.doubling_bytes > 0 ||
      options.crossovers.halving_bytes > 0) {
    for (int p : DoublingPeers(me, n)) peers.push_back(p);
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  HVD_ASSIGN_OR_RETURN(
      std::vector<std::vector<Fd>> mesh,
      ConnectPeers(options, store, "ring", "TCP ring", peers, options.streams));
  return std::unique_ptr<TcpRing>(new TcpRing(options, std::move(mesh)));
}

TcpRing::TcpRing(const TcpRingOptions& options,
                 std::vector<std::vector<Fd>> mesh)
    : options_(options),
      steps_(TcpStepOptions{options.rank, options.streams, options.stream_bytes,
                            options.spin, options.op_timeout},
             std::move(mesh)),
      left_((options.rank + options.size - 1) % options.size),
      right_((options.rank + 1) % options.size),
      doubling_(PlanDoubling(options.rank, options.size)) {}

std::string TcpRing::Where() const {
  return "rank " + std::to_string(options_.rank) + ": TCP ring";
}

Status TcpRing::Allreduce(void* data, size_t count, DataType type,
                          ReduceOp op) {
  if (!broken_.ok()) return broken_;
  if (options_.size == 1 || count == 0) return Status::Ok();
  const size_t bytes = count * DataTypeSize(type);
  uint8_t* d = static_cast<uint8_t*>(data);
  Status s;
  switch (ChooseTcpAlgorithm(Collective::kAllreduce, bytes, options_.size,
                             crossovers_)) {
    case TcpAlgorithm::kDoubling:
      s = Doubling(d, count, type, op);
      break;
    case TcpAlgorithm::kHalving:
      s = Halving(d, count, type, op);
      break;
    default:
      s = Ring(d, count, type, op);
      break;
  }
  if (!s.ok()) broken_ = s;
  return s;
}

// acc[from, to) op= scratch_[from, to): what `arrived` does with input
// received into scratch_.
auto TcpRing::ReduceInto(uint8_t* acc, DataType type, ReduceOp op) {
  return [this, acc, type, op](size_t from, size_t to) {
    ReduceBuffers(type, op, acc + from, acc + from, scratch_.data() + from,
                  (to - from) / DataTypeSize(type));
  };
}

template <typename F>
Status TcpRing::Folded(uint8_t* data, size_t count, DataType type, ReduceOp op,
                       F&& among) {
  const int fold = doubling_.fold;
  const size_t esize = DataTypeSize(type), bytes = count * esize;
  auto none = [](size_t, size_t) {};
  if (doubling_.extra) {  // folds in, then waits for the result
    HVD_RETURN_IF_ERROR(
        steps_.Step(fold, data, bytes, fold, nullptr, 0, esize, false, none));
    return steps_.Step(fold, nullptr, 0, fold, data, bytes, esize, false, none);
  }
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  if (fold >= 0) {
    HVD_RETURN_IF_ERROR(steps_.Step(fold, nullptr, 0, fold, scratch_.data(),
                                    bytes, esize, false,
                                    ReduceInto(data, type, op)));
  }
  HVD_RETURN_IF_ERROR(among());
  if (fold >= 0) {
    return steps_.Step(fold, data, bytes, fold, nullptr, 0, esize, false, none);
  }
  return Status::Ok();
}

Status TcpRing::Doubling(uint8_t* data, size_t count, DataType type,
                         ReduceOp op) {
  return Folded(data, count, type, op, [&]() -> Status {
    const size_t esize = DataTypeSize(type), bytes = count * esize;
    auto reduce = ReduceInto(data, type, op);
    for (int partner : doubling_.partners) {
      HVD_RETURN_IF_ERROR(steps_.Step(partner, data, bytes, partner,
                                      scratch_.data(), bytes, esize, true,
                                      reduce));
    }
    return Status::Ok();
  });
}

Status TcpRing::Halving(uint8_t* data, size_t count, DataType type,
                        ReduceOp op) {
  return Folded(data, count, type, op,
                [&] { return HalvingAmong(data, count, type, op); });
}

Status TcpRing::HalvingAmong(uint8_t* data, size_t count, DataType type,
                             ReduceOp op) {
  const DoublingPlan& plan = doubling_;
  const size_t esize = DataTypeSize(type);
  auto none = [](size_t, size_t) {};
  // Reduce-scatter, the farthest partner first: each step keeps the half
  // of the block on this rank's side (the lower half for the lower rank)
  // and sends the other, so the block halves and its sums double.
  const size_t rounds = plan.partners.size();
  halves_.resize(rounds);
  size_t lo = 0, hi = count;
  for (size_t i = 0; i < rounds; ++i) {
    const int partner = plan.partners[rounds - 1 - i];
    const size_t mid = lo + (hi - lo) / 2;
    const bool low = options_.rank < partner;
    halves_[i] = {lo, mid, hi, low};
    const size_t keep = low ? lo : mid, keep_end = low ? mid : hi;
    const size_t give = low ? mid : lo, give_end = low ? hi : mid;
    HVD_RETURN_IF_ERROR(
        steps_.Step(partner, data + give * esize, (give_end - give) * esize,
                    partner, scratch_.data(), (keep_end - keep) * esize, esize,
                    false, ReduceInto(data + keep * esize, type, op)));
    lo = keep;
    hi = keep_end;
  }
  // Allgather, the nearest partner first: each step swaps the reduced
  // halves of the block it split.
  for (size_t i = rounds; i-- > 0;) {
    const Half& h = halves_[i];
    const int partner = plan.partners[rounds - 1 - i];
    const size_t keep = h.low ? h.lo : h.mid, keep_end = h.low ? h.mid : h.hi;
    const size_t get = h.low ? h.mid : h.lo, get_end = h.low ? h.hi : h.mid;
    HVD_RETURN_IF_ERROR(steps_.Step(
        partner, data + keep * esize, (keep_end - keep) * esize, partner,
        data + get * esize, (get_end - get) * esize, esize, false, none));
  }
  return Status::Ok();
}

Status TcpRing::Ring(uint8_t* data, size_t count, DataType type, ReduceOp op) {
  const int n = options_.size, me = options_.rank;
  const size_t esize = DataTypeSize(type);
  auto block = [&](int b) {
    const int k = ((b % n) + n) % n;
    const size_t first = BlockBegin(count, n, k);
    return Span{first * esize, (BlockBegin(count, n, k + 1) - first) * esize};
  };
  if (scratch_.size() < block(0).bytes) scratch_.resize(block(0).bytes);
  // Reduce-scatter: after step s this rank holds block me - s - 1 reduced
  // over s + 2 ranks; after n - 1 steps, block me + 1 over all of them.
  for (int s = 0; s < n - 1; ++s) {
    const Span out = block(me - s), in = block(me - s - 1);
    HVD_RETURN_IF_ERROR(steps_.Step(right_, data + out.at, out.bytes, left_,
                                    scratch_.data(), in.bytes, esize, false,
                                    ReduceInto(data + in.at, type, op)));
  }
  // Allgather: pass the reduced blocks around.
  for (int s = 0; s < n - 1; ++s) {
    const Span out = block(me + 1 - s), in = block(me - s);
    HVD_RETURN_IF_ERROR(steps_.Step(right_, data + out.at, out.bytes, left_,
                                    data + in.at, in.bytes, esize, false,
                                    [](size_t, size_t) {}));
  }
  return Status::Ok();
}

namespace {

// Where each rank's block begins, and the end: n + 1 offsets.
std::vector<size_t> Offsets(const std::vector<size_t>& sizes, size_t scale) {
  std::vector<size_t> at(sizes.size() + 1, 0);
  for (size_t r = 0; r < sizes.size(); ++r)
    at[r + 1] = at[r] + sizes[r] * scale;
  return at;
}

}  // namespace

Status TcpRing::Allgatherv(const void* in, void* out,
                           const std::vector<size_t>& bytes) {
  if (!broken_.ok()) return broken_;
  const int n = options_.size, me = options_.rank;
  if (bytes.size() != static_cast<size_t>(n)) {
    return Status::InvalidArgument("allgatherv", "needs one size per rank");
  }
  const std::vector<size_t> at = Offsets(bytes, 1);
  uint8_t* o = static_cast<uint8_t*>(out);
  if (bytes[me] > 0 && o + at[me] != in) {
    std::memmove(o + at[me], in, bytes[me]);
  }
  if (n == 1 || at[n] == 0) return Status::Ok();
  Status s = ChooseTcpAlgorithm(Collective::kAllgather, at[n], n,
                                crossovers_) == TcpAlgorithm::kRing
                 ? GatherRing(o, at)
                 : GatherDoubling(o, at);
  if (!s.ok()) broken_ = s;
  return s;
}

Status TcpRing::GatherRing(uint8_t* out, const std::vector<size_t>& at) {
  const int n = options_.size, me = options_.rank;
  auto block = [&](int b) {
    const int k = ((b % n) + n) % n;
    return Span{at[k], at[k + 1] - at[k]};
  };
  for (int s = 0; s < n - 1; ++s) {
    const Span send = block(me - s), recv = block(me - s - 1);
    HVD_RETURN_IF_ERROR(steps_.Step(right_, out + send.at, send.bytes, left_,
                                    out + recv.at, recv.bytes, 1, false,
                                    [](size_t, size_t) {}));
  }
  return Status::Ok();
}

Status TcpRing::GatherDoubling(uint8_t* out, const std::vector<size_t>& at) {
  const int n = options_.size, me = options_.rank, fold = doubling_.fold;
  const size_t total = at[n];
  auto none = [](size_t, size_t) {};
  if (doubling_.extra) {  // hands its block in, then gets them all
    HVD_RETURN_IF_ERROR(steps_.Step(fold, out + at[me], at[me + 1] - at[me],
                                    fold, nullptr, 0, 1, false, none));
    return steps_.Step(fold, nullptr, 0, fold, out, total, 1, false, none);
  }
  if (fold >= 0) {
    HVD_RETURN_IF_ERROR(steps_.Step(fold, nullptr, 0, fold, out + at[fold],
                                    at[fold + 1] - at[fold], 1, false, none));
  }
  const int q = DoublingPow2(n);
  // The blocks of ranks [a, b), past n none.
  auto range = [&](int a, int b) {
    a = std::min(a, n);
    b = std::min(b, n);
    return Span{at[a], at[b] - at[a]};
  };
  for (int m = 1; m < q; m *= 2) {
    const int partner = me ^ m, mine = me & ~(m - 1),
              theirs = partner & ~(m - 1);
    const Span low = range(mine, mine + m), plow = range(theirs, theirs + m);
    HVD_RETURN_IF_ERROR(steps_.Step(partner, out + low.at, low.bytes, partner,
                                    out + plow.at, plow.bytes, 1, false, none));
    const Span high = range(q + mine, q + mine + m),
               phigh = range(q + theirs, q + theirs + m);
    if (high.bytes + phigh.bytes > 0) {
      HVD_RETURN_IF_ERROR(steps_.Step(partner, out + high.at, high.bytes,
                                      partner, out + phigh.at, phigh.bytes, 1,
                                      false, none));
    }
  }
  if (fold >= 0) {
    return steps_.Step(fold, out, total, fold, nullptr, 0, 1, false, none);
  }
  return Status::Ok();
}

Status TcpRing::Broadcast(void* data, size_t bytes, int root) {
  if (!broken_.ok()) return broken_;
  if (options_.size == 1 || bytes == 0) return Status::Ok();
  uint8_t* d = static_cast<uint8_t*>(data);
  Status s = ChooseTcpAlgorithm(Collective::kBroadcast, bytes, options_.size,
                                crossovers_) == TcpAlgorithm::kTree
                 ? Tree(d, bytes, root)
                 : Chain(d, bytes, root);
  if (!s.ok()) broken_ = s;
  return s;
}

Status TcpRing::Tree(uint8_t* data, size_t bytes, int root) {
  const int n = options_.size, me = options_.rank, fold = doubling_.fold;
  auto none = [](size_t, size_t) {};
  const int q = DoublingPow2(n);
  // A root past q hands the buffer to the rank it folds into, which roots
  // the tree.
  const int top = root >= q ? root - q : root;
  if (root >= q && me == root) {
    return steps_.Step(top, data, bytes, top, nullptr, 0, 1, false, none);
  }
  if (doubling_.extra) {
    return steps_.Step(fold, nullptr, 0, fold, data, bytes, 1, false, none);
  }
  if (root >= q && me == top) {
    HVD_RETURN_IF_ERROR(
        steps_.Step(root, nullptr, 0, root, data, bytes, 1, false, none));
  }
  // Round m: the ranks within m of the root (relative: me ^ top) have the
  // buffer and send it to their partner m further.
  const int v = me ^ top;
  for (int m = 1; m < q; m *= 2) {
    const int partner = me ^ m;
    if (v < m) {
      HVD_RETURN_IF_ERROR(steps_.Step(partner, data, bytes, partner, nullptr, 0,
                                      1, false, none));
    } else if (v < 2 * m) {
      HVD_RETURN_IF_ERROR(steps_.Step(partner, nullptr, 0, partner, data, bytes,
                                      1, false, none));
    }
  }
  if (fold >= 0 && fold != root) {
    return steps_.Step(fold, data, bytes, fold, nullptr, 0, 1, false, none);
  }
  return Status::Ok();
}

Status TcpRing::Chain(uint8_t* data, size_t bytes, int root) {
  const int n = options_.size;
  const int place = (options_.rank - root + n) % n;  // 0: the root
  auto none = [](size_t, size_t) {};
  // Pieces small enough that the chain fills quickly, large enough that a
  // step's fixed cost stays small beside its bytes.
  const size_t piece = std::clamp<size_t>(bytes / 4, 1, kChainPiece);
  const size_t pieces = (bytes + piece - 1) / piece;
  auto at = [&](size_t k) { return std::min(k * piece, bytes); };
  // Each link carries the pieces one step each, so both of its ends cut
  // them alike (a step's slices over the streams come from its size).
  for (size_t k = 0; k < pieces && (place == 0 || place == n - 1); ++k) {
    uint8_t* p = data + at(k);
    const size_t b = at(k + 1) - at(k);
    HVD_RETURN_IF_ERROR(
        place == 0
            ? steps_.Step(right_, p, b, right_, nullptr, 0, 1, false, none)
            : steps_.Step(left_, nullptr, 0, left_, p, b, 1, false, none));
  }
  if (place == 0 || place == n - 1) return Status::Ok();
  // Step k takes piece k from the left while passing piece k - 1 right.
  for (size_t k = 0; k <= pieces; ++k) {
    const size_t out = k == 0 ? 0 : at(k - 1), in = at(k);
    HVD_RETURN_IF_ERROR(steps_.Step(right_, data + out, in - out, left_,
                                    data + in, at(k + 1) - in, 1, false, none));
  }
  return Status::Ok();
}

Status TcpRing::Reducescatter(const void* in, void* out,
                              const std::vector<size_t>& counts, DataType type,
                              ReduceOp op) {
  if (!broken_.ok()) return broken_;
  const int n = options_.size, me = options_.rank;
  if (counts.size() != static_cast<size_t>(n)) {
    return Status::InvalidArgument("reducescatter", "needs one count per rank");
  }
  const size_t esize = DataTypeSize(type);
  const std::vector<size_t> at = Offsets(counts, esize);
  work_.assign(static_cast<const uint8_t*>(in),
               static_cast<const uint8_t*>(in) + at[n]);
  Status s;
  if (n > 1 && at[n] > 0) {
    if (ChooseTcpAlgorithm(Collective::kReducescatter, at[n], n, crossovers_) ==
        TcpAlgorithm::kRing) {
      s = ScatterRing(work_.data(), at, type, op);
    } else {
      // Few bytes: the trips are the time, and the doubling makes fewest.
      size_t total = 0;
      for (size_t c : counts) total += c;
      s = Allreduce(work_.data(), total, type, op);
    }
  }
  if (!s.ok()) {
    broken_ = s;
    return s;
  }
  std::memcpy(out, work_.data() + at[me], at[me + 1] - at[me]);
  return Status::Ok();
}

Status TcpRing::ScatterRing(uint8_t* work, const std::vector<size_t>& at,
                            DataType type, ReduceOp op) {
  const int n = options_.size, me = options_.rank;
  auto block = [&](int b) {
    const int k = ((b % n) + n) % n;
    return Span{at[k], at[k + 1] - at[k]};
  };
  size_t largest = 0;
  for (int r = 0; r < n; ++r) largest = std::max(largest, at[r + 1] - at[r]);
  if (scratch_.size() < largest) scratch_.resize(largest);
  const size_t esize = DataTypeSize(type);
  // Block b starts on rank b + 1 and gathers one rank's share per trip
  // round the ring, ending on rank b.
  for (int s = 0; s < n - 1; ++s) {
    const Span send = block(me - s - 1), recv = block(me - s - 2);
    HVD_RETURN_IF_ERROR(steps_.Step(right_, work + send.at, send.bytes, left_,
                                    scratch_.data(), recv.bytes, esize, false,
                                    ReduceInto(work + recv.at, type, op)));
  }
  return Status::Ok();
}

Status TcpRing::ConnectTheRest(Store& store) {
  std::vector<int> rest;
  for (int p = 0; p < options_.size; ++p) {
    if (p != options_.rank && !steps_.Connected(p)) rest.push_back(p);
  }
  // Every rank's set is the complement of the ring's and the doubling's
  // peers, which are symmetric: so is it.
  if (rest.empty()) return Status::Ok();
  HVD_ASSIGN_OR_RETURN(std::vector<std::vector<Fd>> more,
                       ConnectPeers(options_, store, "a2a", "TCP alltoall",
                                    rest, options_.streams));
  for (int p : rest) steps_.Add(p, std::move(more[p]));
  return Status::Ok();
}

Status TcpRing::Alltoallv(const void* in, const std::vector<size_t>& send_bytes,
                          void* out, const std::vector<size_t>& recv_bytes,
                          Store& store) {
  if (!broken_.ok()) return broken_;
  Status s = ConnectTheRest(store);
  if (s.ok()) {
    s = Pairwise(static_cast<const uint8_t*>(in), send_bytes,
                 static_cast<uint8_t*>(out), recv_bytes);
  }
  if (!s.ok()) broken_ = s;
  return s;
}

Status TcpRing::Pairwise(const uint8_t* in,
                         const std::vector<size_t>& send_bytes, uint8_t* out,
                         const std::vector<size_t>& recv_bytes) {
  const int n = options_.size, me = options_.rank;
  const std::vector<size_t> from_at = Offsets(send_bytes, 1);
  const std::vector<size_t> to_at = Offsets(recv_bytes, 1);
  std::memcpy(out + to_at[me], in + from_at[me],
              std::min(send_bytes[me], recv_bytes[me]));
  for (int k = 1; k < n; ++k) {
    const int to = (me + k) % n, from = (me + n - k) % n;
    HVD_RETURN_IF_ERROR(steps_.Step(to, in + from_at[to], send_bytes[to], from,
                                    out + to_at[from], recv_bytes[from], 1,
                                    false, [](size_t, size_t) {}));
  }
  return Status::Ok();
}

Status TcpRing::Barrier() {
  uint8_t nothing = 0;
  return Allreduce(&nothing, 1, DataType::kUInt8, ReduceOp::kMax);
}

}  // namespace hvd::runtime
