// Checkpoints in the safetensors format: an 8-byte little-endian header
// length, a JSON header (per tensor: dtype, shape, data_offsets; string
// metadata under "__metadata__"), then the raw little-endian data. Written
// atomically (temporary file in the same directory, fsync, rename, fsync
// of the directory), so a crash leaves the old file or the new one, never
// a torn one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hvd/status.h"

namespace hvd::mnist {

struct NamedTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;  // F32
};

struct Checkpoint {
  std::vector<NamedTensor> tensors;
  std::map<std::string, std::string> metadata;
};

Status WriteSafetensors(const std::string& path, const Checkpoint& ckpt);
// Every error names the file and what is wrong (not safetensors, a tensor
// past the end, a dtype other than F32, ...).
StatusOr<Checkpoint> ReadSafetensors(const std::string& path);

}  // namespace hvd::mnist
