#include "mnist/tensorboard.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>

namespace hvd::mnist {
namespace {

// Protobuf wire format: varint keys, fixed64 doubles, fixed32 floats,
// length-delimited messages and strings.
void Varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void Key(std::string& out, int field, int wire) {
  Varint(out, static_cast<uint64_t>(field) << 3 | wire);
}
void Double(std::string& out, int field, double v) {
  Key(out, field, 1);
  out.append(reinterpret_cast<const char*>(&v), 8);
}
void Float(std::string& out, int field, float v) {
  Key(out, field, 5);
  out.append(reinterpret_cast<const char*>(&v), 4);
}
void Bytes(std::string& out, int field, const std::string& v) {
  Key(out, field, 2);
  Varint(out, v.size());
  out += v;
}
void Int(std::string& out, int field, int64_t v) {
  Key(out, field, 0);
  Varint(out, static_cast<uint64_t>(v));
}

double Now() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Event{wall_time=1, step=2, summary=5{value=1{tag=1, ...}}}.
std::string SummaryEvent(int64_t step, const std::string& value) {
  std::string summary, event;
  Bytes(summary, 1, value);
  Double(event, 1, Now());
  Int(event, 2, step);
  Bytes(event, 5, summary);
  return event;
}

Status MakeDirs(const std::string& dir) {
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at == dir.size() || dir[at] == '/') {
      std::string part = dir.substr(0, at);
      if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
        return Status::Internal(
            part, std::string("cannot create: ") + std::strerror(errno));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

uint32_t Crc32c(const void* data, size_t n) {
  static uint32_t table[256] = {0};
  static bool ready = [] {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0x82F63B78u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    return true;
  }();
  (void)ready;
  uint32_t crc = 0xFFFFFFFFu;
  const uint8_t* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t MaskedCrc32c(const void* data, size_t n) {
  uint32_t crc = Crc32c(data, n);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

EventWriter::~EventWriter() {
  if (file_) std::fclose(file_);
}

StatusOr<std::unique_ptr<EventWriter>> EventWriter::Open(
    const std::string& dir) {
  HVD_RETURN_IF_ERROR(MakeDirs(dir));
  char host[256] = "localhost";
  ::gethostname(host, sizeof(host) - 1);
  std::unique_ptr<EventWriter> w(new EventWriter());
  w->path_ = dir + "/events.out.tfevents." +
             std::to_string(static_cast<int64_t>(Now())) + "." + host;
  w->file_ = std::fopen(w->path_.c_str(), "wb");
  if (!w->file_) return Status::Internal(w->path_, "cannot be created");
  std::string first;
  Double(first, 1, Now());
  Bytes(first, 3, "brain.Event:2");
  HVD_RETURN_IF_ERROR(w->Write(first));
  return w;
}

Status EventWriter::Write(const std::string& event) {
  uint64_t len = event.size();
  uint32_t len_crc = MaskedCrc32c(&len, 8);
  uint32_t data_crc = MaskedCrc32c(event.data(), event.size());
  bool ok = std::fwrite(&len, 8, 1, file_) == 1 &&
            std::fwrite(&len_crc, 4, 1, file_) == 1 &&
            std::fwrite(event.data(), 1, event.size(), file_) == event.size() &&
            std::fwrite(&data_crc, 4, 1, file_) == 1 && std::fflush(file_) == 0;
  return ok ? Status::Ok() : Status::Internal(path_, "write failed");
}

Status EventWriter::Scalar(const std::string& tag, int64_t step, double value) {
  std::string v;
  Bytes(v, 1, tag);
  Float(v, 2, static_cast<float>(value));
  return Write(SummaryEvent(step, v));
}

Status EventWriter::Histogram(const std::string& tag, int64_t step,
                              const std::vector<float>& values) {
  if (values.empty()) return Status::Ok();
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  double min = *lo, max = *hi, sum = 0, sq = 0;
  for (float x : values) {
    sum += x;
    sq += static_cast<double>(x) * x;
  }
  // 30 equal buckets over [min, max], as TensorBoard's own summaries do.
  constexpr int kBuckets = 30;
  std::vector<double> counts(kBuckets, 0.0);
  double width = (max - min) / kBuckets;
  for (float x : values) {
    int b = width > 0 ? static_cast<int>((x - min) / width) : 0;
    counts[std::min(b, kBuckets - 1)] += 1;
  }
  std::string histo, limits, buckets;
  Double(histo, 1, min);
  Double(histo, 2, max);
  Double(histo, 3, static_cast<double>(values.size()));
  Double(histo, 4, sum);
  Double(histo, 5, sq);
  for (int b = 0; b < kBuckets; ++b) {
    double limit = b == kBuckets - 1 ? max : min + width * (b + 1);
    limits.append(reinterpret_cast<const char*>(&limit), 8);
    buckets.append(reinterpret_cast<const char*>(&counts[b]), 8);
  }
  Bytes(histo, 6, limits);  // packed repeated double
  Bytes(histo, 7, buckets);
  std::string v;
  Bytes(v, 1, tag);
  Bytes(v, 5, histo);
  return Write(SummaryEvent(step, v));
}

}  // namespace hvd::mnist
