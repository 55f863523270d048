// MNIST's IDX reader, on raw and gzip bytes; the first byte picks the file
// kind (images, 2051, or labels, 2049).
#include <cstdint>
#include <cstdlib>

#include "mnist/idx.h"
#include "tests/fuzz/memfile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint32_t magic = data[0] % 2 ? 2051 : 2049;
  hvd::fuzz::MemFile file(data + 1, size - 1);
  std::vector<uint32_t> dims;
  auto bytes = hvd::mnist::ReadIdx(file.path(), magic, &dims);
  if (bytes.ok()) {
    // What it accepts holds exactly the elements its dimensions say.
    uint64_t n = 1;
    for (uint32_t d : dims) n *= d;
    if (n != bytes->size()) std::abort();
  }
  return 0;
}
