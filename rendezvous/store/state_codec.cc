#include "rendezvous/store/state_codec.h"

#include <zlib.h>

#include <cstring>

#include "proto/rendezvous_state.pb.h"

namespace hvd::rendezvous::store {
namespace {

namespace pb = ::hvd::rendezvous::state::v1;

constexpr size_t kFrameHead = 8;
// Larger than any record the table accepts (--max-value-bytes is at most
// 1 GiB): a length past it is damage, not a big value.
constexpr uint32_t kMostPayload = (1u << 30) + (1u << 20);

uint32_t Crc(const std::string& payload) {
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(payload.data()),
            static_cast<uInt>(payload.size())));
}

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

uint32_t GetU32(const std::string& in, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(in[at + i]))
         << (8 * i);
  }
  return v;
}

std::string Frame(const pb::Frame& frame) {
  std::string payload;
  frame.SerializeToString(&payload);
  std::string out;
  out.reserve(kFrameHead + payload.size());
  PutU32(out, static_cast<uint32_t>(payload.size()));
  PutU32(out, Crc(payload));
  out += payload;
  return out;
}

void ToProto(const TableRecord& r, pb::Record* out) {
  out->set_kind(static_cast<pb::Record::Kind>(static_cast<int>(r.kind)));
  out->set_job_id(r.job_id);
  out->set_token_hash(r.token_hash);
  out->set_elastic(r.elastic);
  for (const HostSlots& h : r.hosts) {
    pb::Host* host = out->add_hosts();
    host->set_host(h.host);
    host->set_slots(h.slots);
    host->set_gpus(h.gpus);
  }
  out->set_epoch(r.epoch);
  out->set_rank(r.rank);
  out->set_generation(r.generation);
  out->set_key(r.key);
  out->set_value(r.value);
  for (uint64_t e : r.entries) out->add_entries(e);
}

std::optional<TableRecord> FromProto(const pb::Record& p) {
  if (p.kind() < pb::Record::JOB || p.kind() > pb::Record::BARRIER) {
    return std::nullopt;
  }
  TableRecord r;
  r.kind = static_cast<TableRecord::Kind>(static_cast<int>(p.kind()));
  r.job_id = p.job_id();
  r.token_hash = p.token_hash();
  r.elastic = p.elastic();
  for (const pb::Host& h : p.hosts()) {
    r.hosts.push_back(HostSlots{h.host(), h.slots(), h.gpus()});
  }
  r.epoch = p.epoch();
  r.rank = p.rank();
  r.generation = p.generation();
  r.key = p.key();
  r.value = p.value();
  r.entries.assign(p.entries().begin(), p.entries().end());
  return r;
}

Status Damaged(const std::string& name, size_t at, const std::string& why) {
  return Status::DataLoss(
      name, "damaged at byte " + std::to_string(at) + " (" + why + ")");
}

}  // namespace

std::string EncodeRecordFrame(const TableRecord& record) {
  pb::Frame frame;
  ToProto(record, frame.mutable_record());
  return Frame(frame);
}

std::string EncodeSnapshotEnd(uint64_t records, uint64_t next_journal) {
  pb::Frame frame;
  frame.mutable_snapshot_end()->set_records(records);
  frame.mutable_snapshot_end()->set_next_journal(next_journal);
  return Frame(frame);
}

StatusOr<DecodedFile> DecodeStateFile(const std::string& bytes,
                                      const std::string& name) {
  const size_t magic = std::strlen(kStateMagic);
  if (bytes.compare(0, magic, kStateMagic) != 0) {
    if (bytes.size() < magic &&
        std::string(kStateMagic).compare(0, bytes.size(), bytes) == 0) {
      return DecodedFile{{}, std::nullopt, 0, true};
    }
    return Status::DataLoss(name, "not an hvd rendezvous state file");
  }
  DecodedFile out;
  size_t at = magic;
  while (at < bytes.size()) {
    if (out.next_journal) {
      return Damaged(name, at, "data after the snapshot's end");
    }
    if (bytes.size() - at < kFrameHead) break;
    const uint32_t length = GetU32(bytes, at);
    if (length > kMostPayload) {
      return Damaged(name, at, "a frame length of " + std::to_string(length));
    }
    if (bytes.size() - at - kFrameHead < length) break;
    const std::string payload = bytes.substr(at + kFrameHead, length);
    if (Crc(payload) != GetU32(bytes, at + 4)) {
      return Damaged(name, at, "checksum mismatch");
    }
    pb::Frame frame;
    if (!frame.ParseFromString(payload)) {
      return Damaged(name, at, "a frame that does not parse");
    }
    if (frame.has_snapshot_end()) {
      if (frame.snapshot_end().records() != out.records.size()) {
        return Damaged(name, at, "the snapshot's end counts other records");
      }
      out.next_journal = frame.snapshot_end().next_journal();
    } else {
      std::optional<TableRecord> r = FromProto(frame.record());
      if (!r) return Damaged(name, at, "a record of no known kind");
      out.records.push_back(std::move(*r));
    }
    at += kFrameHead + length;
  }
  out.good_bytes = at;
  out.torn_tail = at < bytes.size();
  return out;
}

}  // namespace hvd::rendezvous::store
