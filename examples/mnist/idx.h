// MNIST's IDX files (images: magic 2051, labels: 2049), gzip-compressed or
// raw: the same reader takes the bundled digits, full MNIST and
// Fashion-MNIST. Every error names the file and what is wrong with it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hvd/status.h"

namespace hvd::mnist {

struct Dataset {
  int count = 0;
  int rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count x rows x cols
  std::vector<uint8_t> labels;  // count, each 0..9
};

// Reads PREFIX-images-idx3-ubyte[.gz] and PREFIX-labels-idx1-ubyte[.gz]
// from `dir` (prefix "train" or "t10k"), checking magic numbers, counts
// and sizes.
StatusOr<Dataset> ReadIdxPair(const std::string& dir,
                              const std::string& prefix);

// One IDX file, decompressed when gzip: `magic` and its dimensions.
StatusOr<std::vector<uint8_t>> ReadIdx(const std::string& path, uint32_t magic,
                                       std::vector<uint32_t>* dims);

}  // namespace hvd::mnist
