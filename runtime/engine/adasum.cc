#include "runtime/engine/adasum.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <utility>

namespace hvd::runtime {
namespace {

// Horovod's floor (sqrt(DBL_MIN), adasum.h): below it a squared norm
// counts as zero and its vector keeps weight 1. Any larger one, however
// small its gradients, is combined.
const double kNormFloor = std::sqrt(DBL_MIN);

// Elements read and written as double: the dot products and norms sum in
// double whatever the tensor's type, and 16-bit floats round once, on the
// way back.
template <typename T>
struct Plain {
  static double Get(const void* p, size_t i) {
    return static_cast<const T*>(p)[i];
  }
  static void Put(void* p, size_t i, double v) {
    static_cast<T*>(p)[i] = static_cast<T>(v);
  }
};
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
struct Narrow {
  static double Get(const void* p, size_t i) {
    return ToFloat(static_cast<const uint16_t*>(p)[i]);
  }
  static void Put(void* p, size_t i, double v) {
    static_cast<uint16_t*>(p)[i] = FromFloat(static_cast<float>(v));
  }
};
using Half = Narrow<HalfToFloat, FloatToHalf>;
using BHalf = Narrow<BFloat16ToFloat, FloatToBFloat16>;

template <class F>
void WithElement(DataType type, F&& f) {
  switch (type) {
    case DataType::kFloat32:
      return f(Plain<float>{});
    case DataType::kFloat64:
      return f(Plain<double>{});
    case DataType::kFloat16:
      return f(Half{});
    case DataType::kBFloat16:
      return f(BHalf{});
    default:
      return;  // refused before it gets here (AdasumTakes)
  }
}

// Adds a.b, |a|^2 and |b|^2 of n elements to out[0..2].
void AddPartials(DataType type, const void* a, const void* b, size_t n,
                 double* out) {
  WithElement(type, [&](auto e) {
    using E = decltype(e);
    double dot = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < n; ++i) {
      const double x = E::Get(a, i), y = E::Get(b, i);
      dot += x * y;
      aa += x * x;
      bb += y * y;
    }
    out[0] += dot;
    out[1] += aa;
    out[2] += bb;
  });
}

// out[i] = w.a a[i] + w.b b[i]; out may be a or b.
void Combine(DataType type, void* out, const void* a, const void* b, size_t n,
             AdasumWeights w) {
  WithElement(type, [&](auto e) {
    using E = decltype(e);
    for (size_t i = 0; i < n; ++i) {
      E::Put(out, i, w.a * E::Get(a, i) + w.b * E::Get(b, i));
    }
  });
}

// Calls f(tensor, begin, end) for each tensor's part inside [lo, hi), in
// elements of the whole buffer.
template <class F>
void ForEachPiece(const std::vector<size_t>& counts, size_t lo, size_t hi,
                  F&& f) {
  size_t at = 0;
  for (size_t t = 0; t < counts.size() && at < hi; ++t) {
    const size_t b = std::max(at, lo), e = std::min(at + counts[t], hi);
    if (b < e) f(t, b, e);
    at += counts[t];
  }
}

int LargestPowerOfTwoUpTo(int n) {
  int q = 1;
  while (q * 2 <= n) q *= 2;
  return q;
}

}  // namespace

AdasumWeights AdasumCoefficients(double dot, double anormsq, double bnormsq) {
  AdasumWeights w;
  if (anormsq >= kNormFloor) w.a = 1.0 - dot / (2.0 * anormsq);
  if (bnormsq >= kNormFloor) w.b = 1.0 - dot / (2.0 * bnormsq);
  return w;
}

bool AdasumTakes(DataType type) {
  return type == DataType::kFloat32 || type == DataType::kFloat64 ||
         type == DataType::kFloat16 || type == DataType::kBFloat16;
}

Adasum::Range Adasum::Final(int rank, size_t n) const {
  const int q = LargestPowerOfTwoUpTo(size_);
  if (rank >= q) return {};
  Range r{0, n};
  for (int d = 1; d < q; d *= 2) {
    const size_t mid = r.begin + (r.end - r.begin) / 2;
    (rank & d ? r.begin : r.end) = mid;
  }
  return r;
}

uint8_t* Adasum::Scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

Status Adasum::Allreduce(Backend& backend, void* data, DataType type,
                         const std::vector<size_t>& counts) {
  if (size_ == 1) return Status::Ok();
  size_t n = 0;
  for (size_t c : counts) n += c;
  auto* bytes = static_cast<uint8_t*>(data);
  const int q = LargestPowerOfTwoUpTo(size_);
  if (q < size_) HVD_RETURN_IF_ERROR(Fold(backend, bytes, type, counts, n));
  Range mine{0, rank_ < q ? n : 0};
  int level = 0;
  for (int d = 1; d < q; d *= 2, ++level) {
    HVD_RETURN_IF_ERROR(Level(backend, level, bytes, type, counts, &mine));
  }
  return Gather(backend, bytes, type, n);
}

// Rank q + i sends its whole buffer to rank i, which combines the two.
Status Adasum::Fold(Backend& backend, uint8_t* data, DataType type,
                    const std::vector<size_t>& counts, size_t n) {
  const int q = LargestPowerOfTwoUpTo(size_);
  const size_t esize = DataTypeSize(type);
  std::vector<size_t> send(size_, 0), recv(size_, 0);
  if (rank_ >= q) send[rank_ - q] = n * esize;
  const bool receives = rank_ + q < size_;
  if (receives) recv[rank_ + q] = n * esize;
  uint8_t* other = Scratch(n * esize);
  HVD_RETURN_IF_ERROR(backend.Alltoallv(data, send, other, recv));
  if (!receives) return Status::Ok();
  ForEachPiece(counts, 0, n, [&](size_t, size_t b, size_t e) {
    double s[3] = {0, 0, 0};
    uint8_t* a = data + b * esize;
    const uint8_t* o = other + b * esize;
    AddPartials(type, a, o, e - b, s);
    Combine(type, a, a, o, e - b, AdasumCoefficients(s[0], s[1], s[2]));
  });
  return Status::Ok();
}

// One halving step: swap halves with the partner at distance 2^level, sum
// the partial products over the pair of groups, combine the kept half.
Status Adasum::Level(Backend& backend, int level, uint8_t* data, DataType type,
                     const std::vector<size_t>& counts, Range* mine) {
  const int q = LargestPowerOfTwoUpTo(size_);
  const int d = 1 << level;
  const size_t esize = DataTypeSize(type);
  const bool active = rank_ < q;
  const bool lower = !(rank_ & d);
  const size_t mid = mine->begin + (mine->end - mine->begin) / 2;
  const Range keep = lower ? Range{mine->begin, mid} : Range{mid, mine->end};
  const Range give = lower ? Range{mid, mine->end} : Range{mine->begin, mid};
  std::vector<size_t> send(size_, 0), recv(size_, 0);
  if (active) {
    send[rank_ ^ d] = (give.end - give.begin) * esize;
    recv[rank_ ^ d] = (keep.end - keep.begin) * esize;
  }
  uint8_t* other = Scratch((keep.end - keep.begin) * esize);
  HVD_RETURN_IF_ERROR(
      backend.Alltoallv(data + give.begin * esize, send, other, recv));
  // The slots of every group of 2^(level+1) ranks: [group][tensor][3], all
  // summed at once; each group reads its own.
  const size_t per_group = counts.size() * 3;
  const size_t groups = static_cast<size_t>(q >> (level + 1));
  sums_.assign(groups * per_group, 0.0);
  double* slot =
      active ? sums_.data() + (rank_ >> (level + 1)) * per_group : nullptr;
  // a is the lower group's vector, b the upper's, on both sides of a pair.
  auto operands = [&](size_t b) {
    uint8_t* own = data + b * esize;
    uint8_t* theirs = other + (b - keep.begin) * esize;
    return std::pair{lower ? own : theirs, lower ? theirs : own};
  };
  if (active) {
    ForEachPiece(counts, keep.begin, keep.end,
                 [&](size_t t, size_t b, size_t e) {
                   auto [x, y] = operands(b);
                   AddPartials(type, x, y, e - b, slot + 3 * t);
                 });
  }
  HVD_RETURN_IF_ERROR(backend.Allreduce(sums_.data(), sums_.size(),
                                        DataType::kFloat64, ReduceOp::kSum));
  if (!active) return Status::Ok();
  ForEachPiece(counts, keep.begin, keep.end, [&](size_t t, size_t b, size_t e) {
    auto [x, y] = operands(b);
    const double* s = slot + 3 * t;
    Combine(type, data + b * esize, x, y, e - b,
            AdasumCoefficients(s[0], s[1], s[2]));
  });
  *mine = keep;
  return Status::Ok();
}

// Every rank receives every part, in rank order, and puts each where it
// belongs.
Status Adasum::Gather(Backend& backend, uint8_t* data, DataType type,
                      size_t n) {
  const size_t esize = DataTypeSize(type);
  std::vector<size_t> bytes(size_);
  for (int r = 0; r < size_; ++r) {
    const Range part = Final(r, n);
    bytes[r] = (part.end - part.begin) * esize;
  }
  uint8_t* all = Scratch(n * esize);
  const Range own = Final(rank_, n);
  HVD_RETURN_IF_ERROR(backend.Allgatherv(data + own.begin * esize, all, bytes));
  size_t at = 0;
  for (int r = 0; r < size_; ++r) {
    const Range part = Final(r, n);
    if (bytes[r]) std::memcpy(data + part.begin * esize, all + at, bytes[r]);
    at += bytes[r];
  }
  return Status::Ok();
}

}  // namespace hvd::runtime
