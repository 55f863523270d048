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

}  // namespace hvd::launcher
