// What hvd-remote-exec reads from the SSH channel before it starts the
// worker, and the frames of a shared connection. A header or frame it
// decodes must encode back to the bytes it took.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "launcher/remote_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hvd::launcher;
  const std::string_view buffer(reinterpret_cast<const char*>(data), size);
  Frame frame;
  auto framed = DecodeFrame(buffer, &frame);
  if (framed.ok() && *framed > 0 &&
      EncodeFrame(frame.kind, frame.worker, frame.bytes) !=
          buffer.substr(0, *framed)) {
    std::abort();
  }
  RemoteLaunch launch;
  auto taken = DecodeRemoteLaunch(buffer, &launch);
  if (!taken.ok() || *taken == 0) return 0;
  if (*taken > size) std::abort();
  RemoteLaunch again;
  const std::string encoded = EncodeRemoteLaunch(launch);
  auto retaken = DecodeRemoteLaunch(encoded, &again);
  if (!retaken.ok() || *retaken != encoded.size() || !(again == launch)) {
    std::abort();
  }
  return 0;
}
