// TensorBoard event files, as Keras' TensorBoard callback writes them:
// LOG_DIR/train and LOG_DIR/validation, each with an
// events.out.tfevents.<time>.<host> file of TFRecords (length, masked
// CRC-32C of the length, a serialized tensorflow.Event, its masked CRC-32C).
// The first event carries file_version "brain.Event:2"; scalars are
// Summary.Value.simple_value, weight histograms HistogramProto. The
// protobuf wire format is written directly: three messages do not justify
// TensorFlow's protos.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "hvd/status.h"

namespace hvd::mnist {

// CRC-32C (Castagnoli) and TFRecord's masking of it.
uint32_t Crc32c(const void* data, size_t n);
uint32_t MaskedCrc32c(const void* data, size_t n);

class EventWriter {
 public:
  ~EventWriter();
  // Creates `dir` (and its parents) and the event file in it.
  static StatusOr<std::unique_ptr<EventWriter>> Open(const std::string& dir);

  Status Scalar(const std::string& tag, int64_t step, double value);
  // Keras-like buckets over [min, max] of `values`.
  Status Histogram(const std::string& tag, int64_t step,
                   const std::vector<float>& values);
  const std::string& path() const { return path_; }

 private:
  EventWriter() = default;
  Status Write(const std::string& event);

  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace hvd::mnist
