// Workers started through the user's command template (--launcher-cmd):
// the same plan as LocalSshRunner's, but no SSH to learn the routes from,
// so each remote host's address is as its name resolves and ours is the
// one toward it (else --network-interface's).
#pragma once

#include "launcher/runners/local_ssh.h"

namespace hvd::launcher {

class TemplateRunner : public LocalSshRunner {
 public:
  using LocalSshRunner::LocalSshRunner;

 protected:
  Status LearnRoutes(const std::vector<std::string>& remote) override;
};

}  // namespace hvd::launcher
