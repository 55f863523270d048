#include "mnist/idx.h"

#include <sys/stat.h>
#include <zlib.h>

namespace hvd::mnist {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

uint32_t BigEndian(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
         (uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

StatusOr<std::vector<uint8_t>> ReadIdx(const std::string& path, uint32_t magic,
                                       std::vector<uint32_t>* dims) {
  // gzread reads raw files unchanged, so one path serves both.
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return Status::NotFound(path, "cannot be opened");
  std::vector<uint8_t> data;
  uint8_t chunk[1 << 16];
  int got;
  while ((got = gzread(f, chunk, sizeof(chunk))) > 0) {
    data.insert(data.end(), chunk, chunk + got);
  }
  int err = 0;
  // Copied: the message lives in the gzFile, which gzclose frees (found by
  // fuzzing).
  const std::string why = gzerror(f, &err);
  gzclose(f);
  if (got < 0 || (err != Z_OK && err != Z_STREAM_END)) {
    return Status::DataLoss(path, std::string("is not valid gzip: ") + why);
  }
  if (data.size() < 4) return Status::DataLoss(path, "is too short for IDX");
  uint32_t m = BigEndian(data.data());
  if (m != magic) {
    return Status::DataLoss(
        path, "has magic number " + std::to_string(m) + ", expected " +
                  std::to_string(magic) +
                  (magic == 2051 ? " (IDX images)" : " (IDX labels)"));
  }
  const size_t ndims = m & 0xff;
  if (data.size() < 4 + 4 * ndims) {
    return Status::DataLoss(path, "ends inside its header");
  }
  const size_t header = 4 + 4 * ndims;
  // The product of the dimensions, refused when it does not fit: it must
  // not wrap around to a size that matches.
  size_t expected = 1;
  dims->clear();
  for (size_t i = 0; i < ndims; ++i) {
    dims->push_back(BigEndian(data.data() + 4 + 4 * i));
    if (__builtin_mul_overflow(expected, size_t{dims->back()}, &expected)) {
      return Status::DataLoss(
          path, "has dimensions whose product does not fit in 64 bits");
    }
  }
  if (data.size() - header != expected) {
    return Status::DataLoss(path,
                            "holds " + std::to_string(data.size() - header) +
                                " bytes of data but its header promises " +
                                std::to_string(expected));
  }
  data.erase(data.begin(), data.begin() + static_cast<ptrdiff_t>(header));
  return data;
}

StatusOr<Dataset> ReadIdxPair(const std::string& dir,
                              const std::string& prefix) {
  std::string missing;
  auto find = [&](const std::string& kind) {
    std::string base = dir + "/" + prefix + "-" + kind;
    if (Exists(base + ".gz")) return base + ".gz";
    if (!Exists(base) && missing.empty()) missing = prefix + "-" + kind;
    return base;
  };
  const std::string images_path = find("images-idx3-ubyte");
  const std::string labels_path = find("labels-idx1-ubyte");
  if (!missing.empty()) {
    // Say what the folder should hold rather than only what is absent.
    return Status::NotFound(
        dir, "has no " + missing + " (nor " + missing +
                 ".gz); a data folder holds MNIST's four IDX files, "
                 "train- and t10k-{images-idx3,labels-idx1}-ubyte, "
                 "gzipped or raw");
  }
  std::vector<uint32_t> idims, ldims;
  HVD_ASSIGN_OR_RETURN(std::vector<uint8_t> pixels,
                       ReadIdx(images_path, 2051, &idims));
  HVD_ASSIGN_OR_RETURN(std::vector<uint8_t> labels,
                       ReadIdx(labels_path, 2049, &ldims));
  if (idims.size() != 3 || idims[1] != 28 || idims[2] != 28) {
    return Status::DataLoss(images_path,
                            "does not hold 28x28 images (this model's input)");
  }
  if (ldims.size() != 1 || ldims[0] != idims[0]) {
    return Status::DataLoss(
        labels_path, "holds " + std::to_string(ldims.empty() ? 0 : ldims[0]) +
                         " labels for " + std::to_string(idims[0]) +
                         " images in " + images_path);
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] > 9) {
      return Status::DataLoss(
          labels_path, "label " + std::to_string(labels[i]) + " at index " +
                           std::to_string(i) + " is not a digit 0-9");
    }
  }
  Dataset d;
  d.count = static_cast<int>(idims[0]);
  d.rows = 28;
  d.cols = 28;
  d.pixels = std::move(pixels);
  d.labels = std::move(labels);
  return d;
}

}  // namespace hvd::mnist
