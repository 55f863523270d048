// An elastic job: hosts come and go (a discovery script, or fixed hosts
// some of which may fail), and the driver (launcher/elastic/driver.h)
// starts and stops workers as they do, each locally or over SSH as
// LocalSshRunner would.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "launcher/elastic/driver.h"
#include "launcher/plan.h"
#include "launcher/remote_hosts.h"
#include "launcher/runners/runner.h"

namespace hvd::launcher {

// The routes to the remote hosts of an elastic job, learnt as hosts
// appear (discovery asks from its own thread).
class RouteBook {
 public:
  explicit RouteBook(const LaunchOptions& options) : options_(options) {}

  bool IsLocal(const HostSpec& h);
  // Ok for a local host and a remote one SSH reaches (its route kept).
  Status Check(const HostSpec& h);
  std::map<std::string, HostRoute> routes();

 private:
  const LaunchOptions& options_;
  std::mutex mu_;
  std::map<std::string, bool> local_;
  std::map<std::string, HostRoute> routes_;
};

class ElasticRunner : public Runner {
 public:
  explicit ElasticRunner(RunnerContext context)
      : context_(std::move(context)), routes_(context_.options) {}

  Status Prepare() override;
  StatusOr<std::unique_ptr<JobRendezvous>> OpenRendezvous() override;
  StatusOr<Launch> Workers(JobRendezvous& job) override;

 private:
  // The driver's view of the job's workers: how to place and start one.
  elastic::ElasticDriverHooks Hooks(JobRendezvous& job);

  const RunnerContext context_;
  RouteBook routes_;
  std::unique_ptr<elastic::HostSource> source_;
  bool loopback_ = true;  // every host is this one: listen on loopback
  std::string iface_address_;
  std::unique_ptr<elastic::ElasticDriver> driver_;
};

}  // namespace hvd::launcher
