#include "launcher/remote_protocol.h"

#include "common/parse.h"

namespace hvd::launcher {
namespace {

constexpr std::string_view kMagic = "HVD1\n";

void Put(std::string& out, char kind, const std::string& value) {
  out += kind;
  out += ' ';
  out += std::to_string(value.size());
  out += '\n';
  out += value;
}

}  // namespace

std::string EncodeRemoteLaunch(const RemoteLaunch& launch) {
  std::string out(kMagic);
  Put(out, 'D', launch.cwd);
  for (const std::string& e : launch.env) Put(out, 'E', e);
  for (const std::string& a : launch.argv) Put(out, 'A', a);
  out += "G\n";
  return out;
}

StatusOr<size_t> DecodeRemoteLaunch(std::string_view buffer,
                                    RemoteLaunch* out) {
  if (buffer.size() < kMagic.size()) return size_t{0};
  if (buffer.substr(0, kMagic.size()) != kMagic) {
    return Status::InvalidArgument("remote launch", "bad header");
  }
  RemoteLaunch launch;
  size_t pos = kMagic.size();
  for (;;) {
    if (pos + 2 > buffer.size()) return size_t{0};
    char kind = buffer[pos];
    if (kind == 'G') {
      if (buffer[pos + 1] != '\n') {
        return Status::InvalidArgument("remote launch", "bad end marker");
      }
      if (launch.argv.empty()) {
        return Status::InvalidArgument("remote launch", "no command");
      }
      *out = std::move(launch);
      return pos + 2;
    }
    if ((kind != 'D' && kind != 'E' && kind != 'A') || buffer[pos + 1] != ' ') {
      return Status::InvalidArgument("remote launch", "bad field");
    }
    size_t nl = buffer.find('\n', pos + 2);
    if (nl == std::string_view::npos) {
      if (buffer.size() - pos > 32) {
        return Status::InvalidArgument("remote launch", "bad length");
      }
      return size_t{0};
    }
    HVD_ASSIGN_OR_RETURN(int64_t len,
                         ParseInt64(buffer.substr(pos + 2, nl - pos - 2),
                                    "remote launch length", 0, 64 << 20));
    if (nl + 1 + len > buffer.size()) return size_t{0};
    std::string value(buffer.substr(nl + 1, len));
    if (kind == 'D') launch.cwd = std::move(value);
    if (kind == 'E') launch.env.push_back(std::move(value));
    if (kind == 'A') launch.argv.push_back(std::move(value));
    pos = nl + 1 + len;
  }
}

namespace {

constexpr size_t kFrameHeader = 9;
constexpr uint32_t kMostFrameBytes = 64u << 20;

void PutU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out += static_cast<char>((v >> shift) & 0xff);
  }
}

uint32_t GetU32(std::string_view in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = v << 8 | static_cast<uint8_t>(in[i]);
  return v;
}

bool KnownKind(char k) {
  for (FrameKind f :
       {FrameKind::kLaunch, FrameKind::kControl, FrameKind::kHangUp,
        FrameKind::kAccepted, FrameKind::kStdout, FrameKind::kStderr,
        FrameKind::kExit}) {
    if (k == static_cast<char>(f)) return true;
  }
  return false;
}

}  // namespace

std::string EncodeFrame(FrameKind kind, uint32_t worker,
                        std::string_view bytes) {
  std::string out;
  out.reserve(kFrameHeader + bytes.size());
  out += static_cast<char>(kind);
  PutU32(out, worker);
  PutU32(out, static_cast<uint32_t>(bytes.size()));
  out += bytes;
  return out;
}

StatusOr<size_t> DecodeFrame(std::string_view buffer, Frame* out) {
  if (buffer.empty()) return size_t{0};
  if (!KnownKind(buffer[0])) {
    return Status::InvalidArgument("shared connection", "unknown frame kind");
  }
  if (buffer.size() < kFrameHeader) return size_t{0};
  const uint32_t len = GetU32(buffer.substr(5));
  if (len > kMostFrameBytes) {
    return Status::InvalidArgument("shared connection", "frame too long");
  }
  if (buffer.size() < kFrameHeader + len) return size_t{0};
  out->kind = static_cast<FrameKind>(buffer[0]);
  out->worker = GetU32(buffer.substr(1));
  out->bytes.assign(buffer.substr(kFrameHeader, len));
  return kFrameHeader + len;
}

}  // namespace hvd::launcher
