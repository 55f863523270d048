#include "runtime/engine/message.h"

#include <algorithm>
#include <cstring>

#include "runtime/engine/engine.h"

namespace hvd::runtime {
namespace {

// A request carries the enums' values as bytes; their last members bound
// what a message may hold. New members go last (every rank must agree on
// the old ones, so the asserts pin them).
constexpr uint8_t kLastOpType = static_cast<uint8_t>(OpType::kJoin);
constexpr uint8_t kLastDataType = static_cast<uint8_t>(DataType::kInt16);
constexpr uint8_t kLastReduceOp = static_cast<uint8_t>(ReduceOp::kProduct);
static_assert(kLastOpType == 6 && kLastDataType == 8 && kLastReduceOp == 3,
              "a request's enum values changed on the wire");

bool Take(std::string_view& in, size_t n, std::string_view* out) {
  if (in.size() < n) return false;
  *out = in.substr(0, n);
  in.remove_prefix(n);
  return true;
}

template <typename T>
bool TakeValue(std::string_view& in, T* v) {
  std::string_view b;
  if (!Take(in, sizeof(T), &b)) return false;
  std::memcpy(v, b.data(), sizeof(T));
  return true;
}

bool TakeBytes(std::string_view& in, std::string_view* out) {
  uint32_t n;
  return TakeValue(in, &n) && Take(in, n, out);
}

}  // namespace

void PutBytes(std::string& out, std::string_view bytes) {
  PutValue<uint32_t>(out, static_cast<uint32_t>(bytes.size()));
  out.append(bytes);
}

void PutMessageHead(std::string& out, uint8_t stop, std::string_view bits,
                    const std::vector<const Request*>& uncached) {
  PutValue<uint8_t>(out, stop);
  PutBytes(out, bits);
  const size_t requests_at = out.size();
  PutValue<uint32_t>(out, 0);  // the requests' length, filled in below
  PutRequests(out, 0, uncached);
  const uint32_t requests_bytes =
      static_cast<uint32_t>(out.size() - requests_at - sizeof(uint32_t));
  std::memcpy(&out[requests_at], &requests_bytes, sizeof(requests_bytes));
}

size_t PutEager(std::string& out, std::string_view name,
                std::string_view data) {
  // One allocation for a large tensor, not a doubling series.
  const size_t need =
      out.size() + 2 * sizeof(uint32_t) + name.size() + data.size() + 64;
  if (need > out.capacity()) out.reserve(std::max(need, 2 * out.capacity()));
  PutBytes(out, name);
  const size_t data_at = out.size() + sizeof(uint32_t);
  PutBytes(out, data);
  return data_at;
}

void PutKnobs(std::string& out, const std::optional<Knobs>& k) {
  PutValue<uint8_t>(out, k ? 1 : 0);
  if (!k) return;
  PutValue<uint64_t>(out, k->fusion_bytes);
  PutValue<int64_t>(out, k->cycle_time.count());
  PutValue<uint8_t>(
      out, (k->cache ? 1 : 0) | (k->hierarchical_allreduce ? 2 : 0) |
               (k->hierarchical_allgather ? 4 : 0) | (k->shm ? 8 : 0) |
               (k->single_copy ? 16 : 0) | (k->several_streams ? 32 : 0));
}

bool ParseCycleMessage(std::string_view in, CycleMessage* m) {
  std::string_view reqs;
  uint32_t neager = 0;
  if (!TakeValue(in, &m->stop) || !TakeBytes(in, &m->bits) ||
      !TakeBytes(in, &reqs) || !TakeValue(in, &neager)) {
    return false;
  }
  m->requests.assign(reqs);
  for (uint32_t i = 0; i < neager; ++i) {
    std::string_view name, data;
    if (!TakeBytes(in, &name) || !TakeBytes(in, &data)) return false;
    m->eager.emplace_back(name, data);
  }
  uint8_t has = 0;
  if (!TakeValue(in, &has)) return false;
  if (has) {
    Knobs k;
    uint64_t fusion = 0;
    int64_t cycle_us = 0;
    uint8_t flags = 0;
    if (!TakeValue(in, &fusion) || !TakeValue(in, &cycle_us) ||
        !TakeValue(in, &flags)) {
      return false;
    }
    k.fusion_bytes = static_cast<size_t>(fusion);
    k.cycle_time = std::chrono::microseconds(cycle_us);
    k.cache = flags & 1;
    k.hierarchical_allreduce = flags & 2;
    k.hierarchical_allgather = flags & 4;
    k.shm = flags & 8;
    k.single_copy = flags & 16;
    k.several_streams = flags & 32;
    m->knobs = k;
  }
  return in.empty();
}

std::string Engine::Encode(uint8_t stop, const std::vector<Request>& reqs) {
  std::vector<const Request*> ptrs;
  ptrs.reserve(reqs.size());
  for (const Request& r : reqs) ptrs.push_back(&r);
  std::string out;
  PutRequests(out, stop, ptrs);
  return out;
}

void PutRequests(std::string& out, uint8_t stop,
                 const std::vector<const Request*>& reqs) {
  PutValue<uint8_t>(out, stop);
  PutValue<uint32_t>(out, static_cast<uint32_t>(reqs.size()));
  for (const Request* req : reqs) {
    const Request& r = *req;
    PutBytes(out, r.name);
    PutValue<uint8_t>(out, static_cast<uint8_t>(r.type));
    PutValue<uint8_t>(out, static_cast<uint8_t>(r.dtype));
    PutValue<uint8_t>(out, static_cast<uint8_t>(r.reduce));
    PutValue<uint8_t>(out, (r.average ? 1 : 0) | (r.adasum ? 2 : 0));
    PutValue<int64_t>(out, r.count);
    PutValue<double>(out, r.prescale);
    PutValue<double>(out, r.postscale);
    PutValue<int32_t>(out, r.root);
    PutValue<uint32_t>(out, static_cast<uint32_t>(r.splits.size()));
    for (int64_t v : r.splits) PutValue<int64_t>(out, v);
    PutValue<uint32_t>(out, static_cast<uint32_t>(r.shape.size()));
    for (int64_t v : r.shape) PutValue<int64_t>(out, v);
    PutValue<int32_t>(out, r.device);
    PutBytes(out, r.group);
  }
}

StatusOr<std::vector<Request>> Engine::Decode(const std::string& bytes,
                                              uint8_t* stop) {
  std::string_view in(bytes);
  uint8_t sd = 0;
  uint32_t n = 0;
  auto bad = Status::DataLoss("negotiation", "malformed message from a peer");
  if (!TakeValue(in, &sd) || !TakeValue(in, &n) || sd > 2) return bad;
  *stop = sd;
  std::vector<Request> reqs;
  for (uint32_t i = 0; i < n; ++i) {
    Request r;
    std::string_view name;
    uint8_t type, dtype, reduce, how;
    if (!TakeBytes(in, &name) || !TakeValue(in, &type) ||
        !TakeValue(in, &dtype) || !TakeValue(in, &reduce) ||
        !TakeValue(in, &how) || !TakeValue(in, &r.count) ||
        !TakeValue(in, &r.prescale) || !TakeValue(in, &r.postscale) ||
        !TakeValue(in, &r.root) || type > kLastOpType ||
        dtype > kLastDataType || reduce > kLastReduceOp || how > 3) {
      return bad;
    }
    r.name.assign(name);
    uint32_t nsplits = 0;
    if (!TakeValue(in, &nsplits) || nsplits > (1u << 24)) return bad;
    r.splits.resize(nsplits);
    for (int64_t& v : r.splits) {
      if (!TakeValue(in, &v)) return bad;
    }
    uint32_t ndims = 0;
    if (!TakeValue(in, &ndims) || ndims > 64) return bad;
    r.shape.resize(ndims);
    for (int64_t& v : r.shape) {
      if (!TakeValue(in, &v)) return bad;
    }
    std::string_view group;
    if (!TakeValue(in, &r.device) || !TakeBytes(in, &group)) return bad;
    r.group.assign(group);
    r.type = static_cast<OpType>(type);
    r.dtype = static_cast<DataType>(dtype);
    r.reduce = static_cast<ReduceOp>(reduce);
    r.average = how & 1;
    r.adasum = how & 2;
    reqs.push_back(std::move(r));
  }
  if (!in.empty()) return bad;
  return reqs;
}

}  // namespace hvd::runtime
