#include "mnist/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace hvd::mnist {
namespace {

Status WriteAll(int fd, const void* data, size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      return Status::Internal(path,
                              std::string("write: ") + std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

}  // namespace

Status WriteSafetensors(const std::string& path, const Checkpoint& ckpt) {
  nlohmann::ordered_json header;
  if (!ckpt.metadata.empty()) {
    header["__metadata__"] = nlohmann::ordered_json::object();
    for (const auto& [k, v] : ckpt.metadata) header["__metadata__"][k] = v;
  }
  size_t offset = 0;
  for (const NamedTensor& t : ckpt.tensors) {
    size_t bytes = t.data.size() * 4;
    header[t.name] = {{"dtype", "F32"},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  // Pad with spaces so the data starts 8-byte aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t len = text.size();
  std::string dir = ".";
  size_t slash = path.rfind('/');
  if (slash != std::string::npos)
    dir = slash == 0 ? "/" : path.substr(0, slash);
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::Internal(
        tmp, std::string("cannot create: ") + std::strerror(errno));
  }
  Status s = WriteAll(fd, &len, 8, tmp);  // little-endian host
  if (s.ok()) s = WriteAll(fd, text.data(), text.size(), tmp);
  for (const NamedTensor& t : ckpt.tensors) {
    if (s.ok()) s = WriteAll(fd, t.data.data(), t.data.size() * 4, tmp);
  }
  if (s.ok() && ::fsync(fd) != 0) {
    s = Status::Internal(tmp, std::string("fsync: ") + std::strerror(errno));
  }
  ::close(fd);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status::Internal(path, std::string("rename: ") + std::strerror(errno));
  }
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  // The rename itself must reach the disk.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return Status::Ok();
}

StatusOr<Checkpoint> ReadSafetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::NotFound("'" + path + "'", std::string("cannot be read: ") +
                                                  std::strerror(errno));
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& why) {
    return Status::DataLoss(path, "is not a valid safetensors file: " + why);
  };
  if (bytes.size() < 8) return bad("shorter than its header length");
  uint64_t len;
  std::memcpy(&len, bytes.data(), 8);
  if (len > bytes.size() - 8) return bad("header length past the end");
  nlohmann::json header = nlohmann::json::parse(
      bytes.begin() + 8, bytes.begin() + 8 + static_cast<ptrdiff_t>(len),
      nullptr, false);
  if (header.is_discarded() || !header.is_object()) {
    return bad("header is not a JSON object");
  }
  const size_t data_start = 8 + len;
  const size_t data_size = bytes.size() - data_start;
  Checkpoint ckpt;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) return bad("__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string())
          return bad("metadata '" + m.key() + "' is not a string");
        ckpt.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const nlohmann::json& t = *it;
    if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") ||
        !t.contains("data_offsets")) {
      return bad("tensor '" + it.key() +
                 "' lacks dtype, shape or data_offsets");
    }
    if (t["dtype"] != "F32") {
      return bad("tensor '" + it.key() + "' is " + t["dtype"].dump() +
                 ", this program reads F32");
    }
    NamedTensor nt;
    nt.name = it.key();
    size_t elems = 1;
    for (const auto& d : t["shape"]) {
      if (!d.is_number_unsigned())
        return bad("tensor '" + it.key() + "' has a bad shape");
      nt.shape.push_back(d.get<int64_t>());
      elems *= d.get<size_t>();
    }
    const auto& off = t["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned()) {
      return bad("tensor '" + it.key() + "' has bad data_offsets");
    }
    size_t begin = off[0].get<size_t>(), end = off[1].get<size_t>();
    if (begin > end || end > data_size || end - begin != elems * 4) {
      return bad("tensor '" + it.key() +
                 "' lies outside the data or has the wrong size");
    }
    nt.data.resize(elems);
    if (elems)
      std::memcpy(nt.data.data(), bytes.data() + data_start + begin, elems * 4);
    ckpt.tensors.push_back(std::move(nt));
  }
  return ckpt;
}

}  // namespace hvd::mnist
