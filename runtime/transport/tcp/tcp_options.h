// Where a TCP full mesh (Gloo's, or the control plane's) listens, and how
// long it waits.
#pragma once

#include <chrono>
#include <string>

#include "common/setting_keys.h"

namespace hvd::runtime {

struct TcpOptions {
  int rank = 0;
  int size = 1;
  // Network interface to bind (HOROVOD_GLOO_IFACE); wins over `hostname`.
  std::string iface;
  // Address or name to bind and advertise when no interface is given.
  std::string hostname = "127.0.0.1";
  // How long the full-mesh connection may take (peers still starting).
  std::chrono::milliseconds connect_timeout{
      settings::Default(settings::key::kStartTimeout)};
  // How long any one collective (or exchange) may wait for a peer.
  std::chrono::milliseconds op_timeout{
      settings::Default(settings::key::kGlooTimeout)};
};

}  // namespace hvd::runtime
