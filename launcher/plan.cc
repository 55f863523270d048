#include "launcher/plan.h"

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
  env["HVD_RENDEZVOUS_ADDR"] = worker.rendezvous_addr.empty()
                                   ? access.rendezvous_addr
                                   : worker.rendezvous_addr;
  env["HVD_JOB_ID"] = access.job_id;
  env["HVD_JOB_TOKEN"] = access.job_token;
  env["HVD_HOST"] = worker.host;
  env["HVD_SLOT"] = std::to_string(worker.slot);
  // PEM text rather than paths, so it reaches workers on any host.
  if (!access.tls_ca_pem.empty()) {
    env["HVD_RENDEZVOUS_TLS_CA"] = access.tls_ca_pem;
  }
  if (!access.tls_cert_pem.empty()) {
    env["HVD_RENDEZVOUS_TLS_CERT"] = access.tls_cert_pem;
    env["HVD_RENDEZVOUS_TLS_KEY"] = access.tls_key_pem;
  }
  if (!worker.gloo_addr.empty()) {
    env["HVD_GLOO_ADDR"] = worker.gloo_addr;
  } else if (plan.all_local) {
    env["HVD_GLOO_ADDR"] = "127.0.0.1";
  }
  env["HOROVOD_HOSTNAME"] = worker.host;
  env["HOROVOD_RANK"] = std::to_string(a.rank);
  env["HOROVOD_SIZE"] = std::to_string(a.size);
  env["HOROVOD_LOCAL_RANK"] = std::to_string(a.local_rank);
  env["HOROVOD_LOCAL_SIZE"] = std::to_string(a.local_size);
  env["HOROVOD_CROSS_RANK"] = std::to_string(a.cross_rank);
  env["HOROVOD_CROSS_SIZE"] = std::to_string(a.cross_size);
  env["HOROVOD_CONTROLLER"] = "gloo";
  env["HOROVOD_CPU_OPERATIONS"] = "gloo";
  env["HOROVOD_START_TIMEOUT"] = std::to_string(plan.start_timeout_s);
  env["HVD_JOIN_TIMEOUT"] = std::to_string(plan.join_timeout_s);
  if (plan.verbose && !env.count("HOROVOD_LOG_LEVEL")) {
    env["HOROVOD_LOG_LEVEL"] = "INFO";
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace hvd::launcher
