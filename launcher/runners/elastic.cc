#include "launcher/runners/elastic.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <random>

#include "launcher/local_host.h"
#include "launcher/say.h"

namespace hvd::launcher {

bool RouteBook::IsLocal(const HostSpec& h) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = local_.find(h.host);
  if (it == local_.end()) {
    it = local_.emplace(h.host, IsLocalHost(h.host)).first;
  }
  return h.user.empty() && it->second;
}

Status RouteBook::Check(const HostSpec& h) {
  if (IsLocal(h)) return Status::Ok();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (routes_.count(h.host)) return Status::Ok();
  }
  HVD_ASSIGN_OR_RETURN(HostRoute route,
                       CheckRemoteHost(h.host, h.user, options_));
  std::lock_guard<std::mutex> lock(mu_);
  routes_[h.host] = route;
  return Status::Ok();
}

std::map<std::string, HostRoute> RouteBook::routes() {
  std::lock_guard<std::mutex> lock(mu_);
  return routes_;
}

Status ElasticRunner::Prepare() {
  const LaunchOptions& options = context_.options;
  const ElasticLaunchOptions& e = options.elastic;
  loopback_ = options.network_interfaces.empty();
  if (e.discovery_script.empty()) {
    // Fixed hosts: every one is checked now; those SSH cannot reach are
    // left out, and the job goes on with the rest if they are enough.
    std::vector<HostSpec> usable;
    for (const HostSpec& h : options.hosts) {
      if (Status s = routes_.Check(h); s.ok()) {
        usable.push_back(h);
        loopback_ &= routes_.IsLocal(h);
      } else {
        Say("elastic: leaving out host " + h.host + ": " + s.message());
      }
    }
    source_ = elastic::FixedHosts(std::move(usable));
  } else {
    // Any host may appear: listen where remote ones reach us.
    loopback_ = false;
    source_ = elastic::PolledHosts(
        elastic::HostDiscovery(e.discovery_script, e.slots_per_host,
                               std::chrono::seconds(options.start_timeout_s)),
        std::chrono::seconds(1),
        [this](const HostSpec& h) { return routes_.Check(h); });
  }
  HVD_ASSIGN_OR_RETURN(iface_address_, InterfaceAddressOf(options));
  return Status::Ok();
}

StatusOr<std::unique_ptr<JobRendezvous>> ElasticRunner::OpenRendezvous() {
  if (context_.options.rendezvous_addr.empty()) {
    return StartElasticRendezvous(loopback_);
  }
  return ConnectElasticRendezvousDaemon(context_.options);
}

elastic::ElasticDriverHooks ElasticRunner::Hooks(JobRendezvous& job) {
  const JobAccess access = job.access();
  // A daemon's address is the same for every worker (0: access's).
  const int port =
      context_.options.rendezvous_addr.empty() ? RendezvousPort(access) : 0;
  LaunchPlan base = PlanWithoutWorkers(context_.options);
  base.tuning_env["HOROVOD_ELASTIC"] = "1";
  base.all_local = loopback_;
  const std::string cwd = WorkingDirectory();
  const std::string ssh_exec = context_.helpers + "/hvd-ssh-exec";
  const std::string remote_exec = RemoteExecPath(context_);
  const int local_gpus = CountLocalGpus();

  elastic::ElasticDriverHooks hooks;
  // The members hook never blocks the supervisor's loop: the answer of the
  // last ask (this one's, from this process's table), a new ask started
  // when none is in flight (a daemon that is away answers only after its
  // retries). An answer asked before the latest membership was set is
  // dropped: it would show the old members, all joined, as formed.
  struct MembersCache {
    std::mutex mu;
    std::vector<rendezvous::Member> latest;  // guarded by mu
    bool asking = false;                     // guarded by mu
    uint64_t sets = 0;                       // guarded by mu
  };
  auto cache = std::make_shared<MembersCache>();
  hooks.set_membership = [&job, cache](std::vector<rendezvous::HostSlots> hosts,
                                       int size) {
    Status s = job.SetMembership(std::move(hosts), size);
    std::lock_guard<std::mutex> lock(cache->mu);
    ++cache->sets;
    cache->latest.clear();
    return s;
  };
  hooks.set_key = [&job](const std::string& key, const std::string& value) {
    return job.Set(key, value);
  };
  hooks.members = [&job, cache] {
    uint64_t asked_at;
    {
      std::lock_guard<std::mutex> lock(cache->mu);
      if (cache->asking) return cache->latest;
      cache->asking = true;
      asked_at = cache->sets;
    }
    job.MembersAsync(
        [cache, asked_at](std::vector<rendezvous::Member> members) {
          std::lock_guard<std::mutex> lock(cache->mu);
          if (asked_at == cache->sets) cache->latest = std::move(members);
          cache->asking = false;
        });
    std::lock_guard<std::mutex> lock(cache->mu);
    return cache->latest;
  };
  hooks.gpus = [this, local_gpus](const HostSpec& h) {
    return routes_.IsLocal(h) ? local_gpus : 0;
  };
  hooks.make_spec =
      [this, base, access, port, cwd, ssh_exec, remote_exec](
          const HostSpec& h, int slot,
          const rendezvous::Assignment& a) -> StatusOr<ProcessSpec> {
    LaunchPlan plan = base;
    WorkerPlan w;
    w.host = h.host;
    w.slot = slot;
    w.assignment = a;
    w.local = routes_.IsLocal(h);
    w.user = h.user;
    plan.workers = {w};
    auto known = routes_.routes();
    if (!w.local && !known.count(h.host)) {
      return Status::Unavailable(h.host, "was never reached over SSH");
    }
    AssignAddresses(plan, known, iface_address_, port);
    const WorkerPlan& placed = plan.workers[0];
    return ProcessSpec{
        placed.local
            ? plan.command
            : RemoteArgv(placed, context_.options, ssh_exec, remote_exec),
        WorkerEnvironment(context_.env, plan, placed, access), cwd};
  };
  return hooks;
}

StatusOr<Launch> ElasticRunner::Workers(JobRendezvous& job) {
  const LaunchOptions& options = context_.options;
  const ElasticLaunchOptions& e = options.elastic;
  elastic::ElasticOptions planner;
  planner.min_np = e.min_np;
  planner.max_np = e.max_np;
  planner.start_np = options.num_proc;
  planner.elastic_timeout = std::chrono::seconds(e.timeout_s);
  planner.reset_limit = e.reset_limit;
  elastic::HostManagerOptions host_options;
  host_options.cooldown_lo_s = e.cooldown_lo_s;
  host_options.cooldown_hi_s = e.cooldown_hi_s;
  host_options.seed = std::random_device{}();
  driver_ = std::make_unique<elastic::ElasticDriver>(
      planner, host_options, std::move(source_), Hooks(job), options.verbose);
  Launch launch;
  launch.driver = driver_.get();
  launch.size = options.num_proc;
  return launch;
}

}  // namespace hvd::launcher
