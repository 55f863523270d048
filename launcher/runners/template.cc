#include "launcher/runners/template.h"

#include "common/local_address.h"
#include "launcher/local_host.h"

namespace hvd::launcher {

Status TemplateRunner::LearnRoutes(const std::vector<std::string>& remote) {
  for (const std::string& host : remote) {
    auto peer = ResolveAddress(host);
    auto us = !iface_address_.empty() ? StatusOr<std::string>(iface_address_)
              : peer.ok()             ? LocalAddressToward(*peer)
                                      : StatusOr<std::string>(peer.status());
    if (!us.ok()) {
      return Status::NotFound("--launcher-cmd",
                              "cannot tell how host " + host +
                                  " reaches this machine; give "
                                  "--network-interface");
    }
    // A host that does not resolve: each worker finds its own ("auto").
    routes_[host] = HostRoute{*us, peer.ok() ? *peer : "auto"};
  }
  return Status::Ok();
}

}  // namespace hvd::launcher
