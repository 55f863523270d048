#include "launcher/plan.h"

#include <set>
#include <string>

#include "common/worker_env.h"

namespace hvd::launcher {

LaunchPlan PlanWithoutWorkers(const LaunchOptions& options) {
  LaunchPlan plan;
  plan.command = options.command;
  plan.start_timeout_s = options.start_timeout_s;
  plan.join_timeout_s = options.join_timeout_s;
  plan.verbose = options.verbose;
  plan.tuning_env = options.worker_env;
  return plan;
}

StatusOr<LaunchPlan> MakePlan(const LaunchOptions& options,
                              const HostFacts& facts) {
  long long total = 0;
  for (const HostSpec& h : options.hosts) total += h.slots;
  if (total < options.num_proc) {
    return Status::InvalidArgument(
        "-np " + std::to_string(options.num_proc),
        "needs " + std::to_string(options.num_proc) + " slots but " +
            (options.hosts.empty()
                 ? "no host has a slot (" + options.hosts_from + ")"
                 : "-H " + FormatHostList(options.hosts) + " has " +
                       std::to_string(total)) +
            "; add hosts or slots");
  }
  LaunchPlan plan = PlanWithoutWorkers(options);
  int left = options.num_proc;
  std::vector<std::pair<bool, std::string>> locality;  // per used host
  for (const HostSpec& h : options.hosts) {
    if (left == 0) break;
    // "user@host" asks for a login, so it always goes through SSH.
    bool local = h.user.empty() && facts.is_local(h.host);
    int used = std::min(left, h.slots);
    plan.hosts.push_back({h.host, used, local ? facts.local_gpus : 0});
    locality.push_back({local, h.user});
    if (!local) plan.all_local = false;
    left -= used;
  }
  std::vector<rendezvous::Assignment> assignments =
      rendezvous::ComputeAssignments(plan.hosts);
  size_t rank = 0;
  for (size_t i = 0; i < plan.hosts.size(); ++i) {
    const rendezvous::HostSlots& h = plan.hosts[i];
    for (int slot = 0; slot < h.slots; ++slot) {
      WorkerPlan w;
      w.host = h.host;
      w.slot = slot;
      w.assignment = assignments[rank++];
      w.local = locality[i].first;
      w.user = locality[i].second;
      plan.workers.push_back(std::move(w));
    }
  }
  return plan;
}

std::string AppendToPath(const std::string& search_path,
                         const std::string& dir) {
  if (dir.empty()) return search_path;
  size_t start = 0;
  while (start <= search_path.size()) {
    size_t end = search_path.find(':', start);
    if (end == std::string::npos) end = search_path.size();
    if (search_path.compare(start, end - start, dir) == 0 &&
        end - start == dir.size()) {
      return search_path;
    }
    start = end + 1;
  }
  return search_path.empty() ? dir : search_path + ":" + dir;
}

std::vector<std::string> WorkerEnvironment(
    const std::map<std::string, std::string>& launcher_env,
    const LaunchPlan& plan, const WorkerPlan& worker, const JobAccess& access) {
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : launcher_env) {
    if (k.rfind("BASH_FUNC_", 0) == 0 || k == "OLDPWD" ||
        k == "CUDA_VISIBLE_DEVICES") {
      continue;
    }
    env[k] = v;
  }
  for (const auto& [k, v] : plan.tuning_env) env[k] = v;
  const rendezvous::Assignment& a = worker.assignment;
  env[worker_env::kRendezvousAddr] = worker.rendezvous_addr.empty()
                                         ? access.rendezvous_addr
                                         : worker.rendezvous_addr;
  env[worker_env::kJobId] = access.job_id;
  env[worker_env::kJobToken] = access.job_token;
  env[worker_env::kHost] = worker.host;
  env[worker_env::kSlot] = std::to_string(worker.slot);
  // PEM text rather than paths, so it reaches workers on any host.
  if (!access.tls_ca_pem.empty()) {
    env[worker_env::kTlsCa] = access.tls_ca_pem;
  }
  if (!access.tls_cert_pem.empty()) {
    env[worker_env::kTlsCert] = access.tls_cert_pem;
    env[worker_env::kTlsKey] = access.tls_key_pem;
  }
  if (!worker.gloo_addr.empty()) {
    env[worker_env::kGlooAddr] = worker.gloo_addr;
  } else if (plan.all_local) {
    env[worker_env::kGlooAddr] = "127.0.0.1";
  }
  env[worker_env::kHostname] = worker.host;
  env[worker_env::kRank] = std::to_string(a.rank);
  env[worker_env::kSize] = std::to_string(a.size);
  env[worker_env::kLocalRank] = std::to_string(a.local_rank);
  env[worker_env::kLocalSize] = std::to_string(a.local_size);
  env[worker_env::kCrossRank] = std::to_string(a.cross_rank);
  env[worker_env::kCrossSize] = std::to_string(a.cross_size);
  env[worker_env::kController] = "gloo";
  env[worker_env::kCpuOperations] = "gloo";
  env[worker_env::kStartTimeout] = std::to_string(plan.start_timeout_s);
  env["HVD_JOIN_TIMEOUT"] = std::to_string(plan.join_timeout_s);
  if (plan.verbose && !env.count("HOROVOD_LOG_LEVEL")) {
    env["HOROVOD_LOG_LEVEL"] = "INFO";
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<std::string> StepEnvironment(
    const std::vector<std::string>& job_env, const std::string& rendezvous_addr,
    bool all_local, const std::string& task_hosts) {
  std::set<std::string> per_task;
  for (const worker_env::Var& v : worker_env::kAll) {
    if (v.per_task) per_task.insert(v.name);
  }
  std::vector<std::string> out;
  for (const std::string& kv : job_env) {
    if (!per_task.count(kv.substr(0, kv.find('=')))) out.push_back(kv);
  }
  out.push_back(
      worker_env::Entry(worker_env::kRendezvousAddr, rendezvous_addr));
  if (all_local)
    out.push_back(worker_env::Entry(worker_env::kGlooAddr, "127.0.0.1"));
  out.push_back(worker_env::Entry(worker_env::kTaskHosts, task_hosts));
  return out;
}

}  // namespace hvd::launcher
