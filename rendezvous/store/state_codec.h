// The frames of the rendezvous daemon's state files (--state-dir): each
// is a 4-byte little-endian length, the CRC-32 of the payload, and the
// payload, a serialized state.v1.Frame (proto/rendezvous_state.proto).
// Pure: bytes in, records out, every damage named by its byte offset.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "rendezvous/table_record.h"

namespace hvd::rendezvous::store {

// Every state file starts with this line, so a wrong file is told apart
// from a damaged one.
inline constexpr char kStateMagic[] = "hvd-rendezvous-state 1\n";

std::string EncodeRecordFrame(const TableRecord& record);
std::string EncodeSnapshotEnd(uint64_t records, uint64_t next_journal);

struct DecodedFile {
  std::vector<TableRecord> records;
  // The snapshot's end frame, when the file has one (its last frame).
  std::optional<uint64_t> next_journal;
  // Bytes up to the end of the last whole frame.
  size_t good_bytes = 0;
  // The file ends inside a frame: a write the daemon died in.
  bool torn_tail = false;
};

// Reads a whole state file. DataLoss for a missing magic line, a frame
// whose checksum or payload is wrong, or frames after a snapshot's end;
// `name` names the file in the error.
StatusOr<DecodedFile> DecodeStateFile(const std::string& bytes,
                                      const std::string& name);

}  // namespace hvd::rendezvous::store
