// horovodrun: parse, plan, start the rendezvous, spawn, supervise.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "common/files.h"
#include "common/worker_env.h"
#include "launcher/cli.h"
#include "launcher/elastic/driver.h"
#include "launcher/job_rendezvous.h"
#include "launcher/job_watch.h"
#include "launcher/local_host.h"
#include "launcher/mpirun.h"
#include "launcher/plan.h"
#include "launcher/remote_hosts.h"
#include "launcher/spawner.h"
#include "launcher/srun.h"
#include "launcher/supervisor.h"

extern char** environ;

namespace hvd::launcher {
namespace {

// CLI errors: one line, exit 2, nothing started.
constexpr int kUsageError = 2;

int Fail(const Status& s, int code) {
  std::fprintf(stderr, "horovodrun: %s\n", s.message().c_str());
  return code;
}

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

// hvd's Python package as this horovodrun's build or installation lays it
// out: build/python beside build/launcher, or PREFIX/lib/python3/
// dist-packages beside PREFIX/bin; "" when neither holds it.
std::string PythonPackageDir(const std::string& here) {
  for (const char* rel : {"/../python", "/../lib/python3/dist-packages"}) {
    std::string dir = here + rel;
    if (::access((dir + "/hvd/__init__.py").c_str(), R_OK) == 0) {
      char real[PATH_MAX];
      return ::realpath(dir.c_str(), real) ? std::string(real) : dir;
    }
  }
  return "";
}

// The directory of this executable.
std::string SelfDirectory() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

// Where the helpers (hvd-ssh-exec, hvd-remote-exec) are: beside horovodrun
// in the build tree, PREFIX/libexec/hvd when installed (remote hosts have
// the same layout).
std::string HelperDirectory(const std::string& self) {
  if (::access((self + "/hvd-remote-exec").c_str(), X_OK) == 0) return self;
  return self + "/../libexec/hvd";
}

// The routes to the remote hosts of an elastic job, learnt as hosts
// appear (discovery asks from its own thread).
class RouteBook {
 public:
  explicit RouteBook(const LaunchOptions& options) : options_(options) {}

  bool IsLocal(const HostSpec& h) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = local_.find(h.host);
    if (it == local_.end()) {
      it = local_.emplace(h.host, IsLocalHost(h.host)).first;
    }
    return h.user.empty() && it->second;
  }

  // Ok for a local host and a remote one SSH reaches (its route kept).
  Status Check(const HostSpec& h) {
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

  std::map<std::string, HostRoute> routes() {
    std::lock_guard<std::mutex> lock(mu_);
    return routes_;
  }

 private:
  const LaunchOptions& options_;
  std::mutex mu_;
  std::map<std::string, bool> local_;
  std::map<std::string, HostRoute> routes_;
};

// An elastic job: the driver starts and stops workers as hosts come and go.
int RunElasticJob(const LaunchOptions& options,
                  const std::map<std::string, std::string>& env,
                  const std::string& here) {
  const ElasticLaunchOptions& e = options.elastic;
  RouteBook routes(options);
  std::unique_ptr<elastic::HostSource> source;
  bool loopback = options.network_interfaces.empty();
  if (e.discovery_script.empty()) {
    // Fixed hosts: every one is checked now; those SSH cannot reach are
    // left out, and the job goes on with the rest if they are enough.
    std::vector<HostSpec> usable;
    for (const HostSpec& h : options.hosts) {
      if (Status s = routes.Check(h); s.ok()) {
        usable.push_back(h);
        loopback &= routes.IsLocal(h);
      } else {
        std::fprintf(stderr, "horovodrun: elastic: leaving out host %s: %s\n",
                     h.host.c_str(), s.message().c_str());
      }
    }
    source = elastic::FixedHosts(std::move(usable));
  } else {
    // Any host may appear: listen where remote ones reach us.
    loopback = false;
    source = elastic::PolledHosts(
        elastic::HostDiscovery(e.discovery_script, e.slots_per_host,
                               std::chrono::seconds(options.start_timeout_s)),
        std::chrono::seconds(1),
        [&routes](const HostSpec& h) { return routes.Check(h); });
  }
  std::string iface_address;
  if (!options.network_interfaces.empty()) {
    auto a = InterfaceAddress(options.network_interfaces.front());
    if (!a.ok()) return Fail(a.status(), kUsageError);
    iface_address = *a;
  }

  InstallLauncherSignalHandlers();
  auto rendezvous = StartElasticRendezvous(loopback);
  if (!rendezvous.ok()) return Fail(rendezvous.status(), 1);
  JobRendezvous* job = rendezvous->get();
  const JobAccess access = job->access();
  const int port = RendezvousPort(access);

  LaunchPlan base = PlanWithoutWorkers(options);
  base.tuning_env["HOROVOD_ELASTIC"] = "1";
  base.all_local = loopback;
  char cwd[4096];
  const std::string cwd_str = getcwd(cwd, sizeof(cwd)) ? cwd : "";
  const std::string ssh_exec = here + "/hvd-ssh-exec";
  const std::string remote_exec = env.count("HVD_REMOTE_EXEC")
                                      ? env.at("HVD_REMOTE_EXEC")
                                      : here + "/hvd-remote-exec";
  const int local_gpus = CountLocalGpus();

  elastic::ElasticDriverHooks hooks;
  hooks.set_membership = [job](std::vector<rendezvous::HostSlots> hosts,
                               int size) {
    return job->SetMembership(std::move(hosts), size);
  };
  hooks.gpus = [&routes, local_gpus](const HostSpec& h) {
    return routes.IsLocal(h) ? local_gpus : 0;
  };
  hooks.make_spec =
      [&](const HostSpec& h, int slot,
          const rendezvous::Assignment& a) -> StatusOr<ProcessSpec> {
    LaunchPlan plan = base;
    WorkerPlan w;
    w.host = h.host;
    w.slot = slot;
    w.assignment = a;
    w.local = routes.IsLocal(h);
    w.user = h.user;
    plan.workers = {w};
    auto known = routes.routes();
    if (!w.local && !known.count(h.host)) {
      return Status::Unavailable(h.host, "was never reached over SSH");
    }
    AssignAddresses(plan, known, iface_address, port);
    const WorkerPlan& placed = plan.workers[0];
    return ProcessSpec{placed.local
                           ? plan.command
                           : RemoteArgv(placed, options, ssh_exec, remote_exec),
                       WorkerEnvironment(env, plan, placed, access), cwd_str};
  };

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
  elastic::ElasticDriver driver(planner, host_options, std::move(source),
                                std::move(hooks), options.verbose);

  SupervisorOptions sup;
  sup.verbose = options.verbose;
  sup.timestamps = options.prefix_output_with_timestamp;
  sup.output_dir = options.output_filename;
  sup.watchdog = here + "/hvd-remote-exec";
  sup.job_id = access.job_id;
  auto watch = JobWatch::Start(options, job, options.num_proc);
  if (!watch.ok()) return Fail(watch.status(), 1);
  auto spawner = MakeLocalSpawner();
  int code = Supervisor(sup).RunElastic(driver, *spawner);
  (*watch)->Finish();
  job->End("the job finished with exit status " + std::to_string(code));
  return code;
}

// The address of a Slurm node, as slurmctld knows it (NodeAddr), else as
// its name resolves; "" when neither tells.
std::string SlurmNodeAddress(const std::string& node) {
  if (node.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                             "VWXYZ0123456789-_.") == std::string::npos) {
    auto out = elastic::RunScript("scontrol show node -o '" + node + "'",
                                  std::chrono::seconds(10));
    if (out.ok()) {
      std::smatch m;
      if (std::regex_search(*out, m, std::regex(R"(NodeAddr=(\S+))"))) {
        std::string addr = m[1];
        if (auto ip = ResolveAddress(addr); ip.ok()) return *ip;
      }
    }
  }
  auto ip = ResolveAddress(node);
  return ip.ok() ? *ip : "";
}

// A file in TMPDIR (else /tmp) with `text`, removed when this goes.
class TempFile {
 public:
  static StatusOr<std::unique_ptr<TempFile>> Create(const std::string& text) {
    const char* dir = std::getenv("TMPDIR");
    std::string path = std::string(dir && *dir ? dir : "/tmp") + "/hvd-XXXXXX";
    int fd = mkstemp(path.data());
    if (fd < 0) return Status::PermissionDenied(path, std::strerror(errno));
    std::unique_ptr<TempFile> file(new TempFile(path));
    const bool ok = write(fd, text.data(), text.size()) ==
                    static_cast<ssize_t>(text.size());
    close(fd);
    if (!ok) return Status::Internal(path, "cannot be written");
    return file;
  }
  ~TempFile() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// Every worker in one process that starts them all: an srun step of the
// job's Slurm allocation, or mpirun. Each worker finds its place in the
// plan from its task index (worker_env::kTaskHosts).
int RunStepJob(const LaunchOptions& options, LaunchPlan& plan,
               const std::map<std::string, std::string>& env,
               const std::string& here, const std::string& program) {
  const bool mpirun = options.launcher == Launcher::kMpirun;
  std::string us;  // where the workers' hosts reach this machine
  if (!options.network_interfaces.empty()) {
    auto a = InterfaceAddress(options.network_interfaces.front());
    if (!a.ok()) return Fail(a.status(), kUsageError);
    us = *a;
  } else if (!plan.all_local) {
    const std::string host = plan.hosts.front().host;
    std::string addr;
    if (mpirun) {
      auto ip = ResolveAddress(host);
      if (ip.ok()) addr = *ip;
    } else {
      addr = SlurmNodeAddress(host);
    }
    auto a = addr.empty() ? StatusOr<std::string>(Status::NotFound(host, ""))
                          : LocalAddressToward(addr);
    if (!a.ok()) {
      return Fail(Status::NotFound(mpirun ? "--mpi" : "--launcher srun",
                                   "cannot tell how host " + host +
                                       " reaches this machine; give "
                                       "--network-interface"),
                  kUsageError);
    }
    us = *a;
  }
  std::vector<HostSpec> hosts;  // in rank order
  for (const rendezvous::HostSlots& h : plan.hosts) {
    hosts.push_back({h.host, h.slots, ""});
  }
  std::unique_ptr<TempFile> hostfile;
  if (!mpirun) {
    // srun places task i on the plan's host of rank i.
    auto f = TempFile::Create(SrunHostfile(hosts));
    if (!f.ok()) return Fail(f.status(), 1);
    hostfile = std::move(*f);
  }

  InstallLauncherSignalHandlers();
  auto rendezvous = StartEmbeddedRendezvous(plan);
  if (!rendezvous.ok()) return Fail(rendezvous.status(), 1);
  JobRendezvous* job = rendezvous->get();
  const JobAccess& access = job->access();
  // The job-wide variables; each worker's own come from its task index.
  const int port = RendezvousPort(access);
  std::vector<std::string> step_env = StepEnvironment(
      WorkerEnvironment(env, plan, plan.workers.front(), access),
      us.empty() ? access.rendezvous_addr
                 : (us.find(':') != std::string::npos ? "[" + us + "]" : us) +
                       ":" + std::to_string(port),
      plan.all_local, FormatHostList(hosts));
  std::vector<std::string> argv;
  if (mpirun) {
    argv = MpirunArgv(program, hosts, MpirunExports(step_env), options.mpi_args,
                      plan.command, geteuid() == 0);
  } else {
    step_env.push_back("SLURM_HOSTFILE=" + hostfile->path());
    const std::string wrapper = env.count("HVD_REMOTE_EXEC")
                                    ? env.at("HVD_REMOTE_EXEC")
                                    : here + "/hvd-remote-exec";
    argv = SrunArgv(program, hosts, wrapper, plan.command);
  }
  char cwd[4096];
  ProcessSpec spec{argv, step_env, getcwd(cwd, sizeof(cwd)) ? cwd : ""};
  if (plan.verbose) {
    std::fprintf(
        stderr, "horovodrun: rendezvous on %s, job %s, %zu workers %s\n",
        access.rendezvous_addr.c_str(), access.job_id.c_str(),
        plan.workers.size(), mpirun ? "started by mpirun" : "in one srun step");
  }

  SupervisorOptions sup;
  sup.join_timeout = std::chrono::seconds(plan.join_timeout_s);
  sup.verbose = plan.verbose;
  sup.timestamps = options.prefix_output_with_timestamp;
  sup.output_dir = options.output_filename;
  sup.watchdog = here + "/hvd-remote-exec";
  sup.job_id = access.job_id;
  sup.joined_ranks = [job] { return job->JoinedRanks(); };
  for (const WorkerPlan& w : plan.workers) sup.step_hosts.push_back(w.host);
  sup.step_is_mpirun = mpirun;
  auto watch =
      JobWatch::Start(options, job, static_cast<int>(plan.workers.size()));
  if (!watch.ok()) return Fail(watch.status(), 1);
  auto spawner = MakeLocalSpawner();
  int code =
      Supervisor(sup).Run({spec}, {mpirun ? "mpirun" : "srun"}, *spawner);
  (*watch)->Finish();
  job->End("the job finished with exit status " + std::to_string(code));
  return code;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::map<std::string, std::string> env = Environment();
  auto options = ParseCommandLine(args, env, ReadWholeFile);
  if (!options.ok()) return Fail(options.status(), kUsageError);
  if (options->show_help) {
    std::fputs(HelpText().c_str(), stdout);
    return 0;
  }
  if (options->show_version) {
    std::puts(VersionText().c_str());
    return 0;
  }
  if (options->check_build) {
    std::fputs(CheckBuildText().c_str(), stdout);
    return 0;
  }
  for (const std::string& w : options->warnings) {
    std::fprintf(stderr, "horovodrun: warning: %s\n", w.c_str());
  }
  if (options->verbose) {
    for (const std::string& n : options->notes) {
      std::fprintf(stderr, "horovodrun: %s\n", n.c_str());
    }
  }
  const std::string self = SelfDirectory();
  const std::string here = HelperDirectory(self);
  // Workers that are Python scripts import horovod.torch from the package
  // that came with this horovodrun, with no PYTHONPATH to set by hand (a
  // package the user's PYTHONPATH names comes first).
  if (std::string py = PythonPackageDir(self); !py.empty()) {
    env["PYTHONPATH"] =
        AppendToPath(env.count("PYTHONPATH") ? env.at("PYTHONPATH") : "", py);
  }
  JobWatch::AskWorkers(*options, env);
  if (options->elastic.enabled) return RunElasticJob(*options, env, here);
  HostFacts facts{IsLocalHost, CountLocalGpus()};
  auto plan = MakePlan(*options, facts);
  if (!plan.ok()) return Fail(plan.status(), kUsageError);
  // A local command that cannot run is a usage error caught before
  // anything starts; remote hosts check their own PATH.
  bool any_local = false;
  for (const WorkerPlan& w : plan->workers) any_local |= w.local;
  if (any_local && options->launcher != Launcher::kSrun) {
    auto env_path = env.find("PATH");
    auto program = ResolveProgram(
        plan->command[0], env_path == env.end() ? "" : env_path->second);
    if (!program.ok()) return Fail(program.status(), kUsageError);
  }
  if (options->launcher == Launcher::kMpirun) {
    auto env_path = env.find("PATH");
    auto mpirun =
        ResolveProgram("mpirun", env_path == env.end() ? "" : env_path->second);
    if (!mpirun.ok()) {
      return Fail(Status::NotFound("--mpi",
                                   "mpirun is not on PATH (install OpenMPI: "
                                   "openmpi-bin)"),
                  kUsageError);
    }
    return RunStepJob(*options, *plan, env, here, *mpirun);
  }
  if (options->launcher == Launcher::kSrun) {
    auto env_path = env.find("PATH");
    auto srun =
        ResolveProgram("srun", env_path == env.end() ? "" : env_path->second);
    if (srun.ok()) return RunStepJob(*options, *plan, env, here, *srun);
    if (options->launcher_given) {
      return Fail(Status::NotFound("--launcher srun",
                                   "srun is not on PATH (install Slurm's "
                                   "client, or use --launcher ssh)"),
                  kUsageError);
    }
    if (options->verbose) {
      std::fprintf(stderr,
                   "horovodrun: in a Slurm allocation but srun is not on "
                   "PATH; starting workers over SSH\n");
    }
  }

  // Every remote host is reached before anything starts; each failure is
  // one line naming the host. --verbose says so in Horovod's words first
  // (on stdout, as its print()s), hvd's own lines after (on stderr).
  std::vector<std::string> remote;
  for (const WorkerPlan& w : plan->workers) {
    if (!w.local &&
        std::find(remote.begin(), remote.end(), w.host) == remote.end()) {
      remote.push_back(w.host);
    }
  }
  if (plan->verbose) {
    std::string names;
    for (const std::string& h : remote) names += (names.empty() ? "" : " ") + h;
    std::printf("Filtering local host names.\nRemote host found: %s\n",
                names.c_str());
    if (!remote.empty() && options->launcher_cmd.empty()) {
      std::printf("Checking ssh on all remote hosts.\n");
    }
    std::fflush(stdout);
  }
  std::string iface_address;
  if (!options->network_interfaces.empty()) {
    auto a = InterfaceAddress(options->network_interfaces.front());
    if (!a.ok()) return Fail(a.status(), kUsageError);
    iface_address = *a;
  }
  std::map<std::string, HostRoute> routes;
  if (options->launcher_cmd.empty()) {
    std::vector<std::string> host_errors;
    auto checked = CheckRemoteHosts(*plan, *options, &host_errors);
    if (!checked.ok()) {
      for (const std::string& e : host_errors) {
        std::fprintf(stderr, "horovodrun: %s\n", e.c_str());
      }
      return 1;
    }
    routes = std::move(*checked);
    if (plan->verbose && !remote.empty()) {
      std::printf("SSH was successful into all the remote hosts.\n");
      std::fflush(stdout);
    }
  } else {
    // No SSH to learn the routes from: the hosts' addresses as they
    // resolve (else each worker finds its own: "auto"), and ours toward
    // them (else --network-interface's).
    for (const std::string& host : remote) {
      auto peer = ResolveAddress(host);
      auto us = !iface_address.empty() ? StatusOr<std::string>(iface_address)
                : peer.ok()            ? LocalAddressToward(*peer)
                                       : StatusOr<std::string>(peer.status());
      if (!us.ok()) {
        return Fail(Status::NotFound("--launcher-cmd",
                                     "cannot tell how host " + host +
                                         " reaches this machine; give "
                                         "--network-interface"),
                    kUsageError);
      }
      routes[host] = HostRoute{*us, peer.ok() ? *peer : "auto"};
    }
  }

  InstallLauncherSignalHandlers();

  auto rendezvous = options->rendezvous_addr.empty()
                        ? StartEmbeddedRendezvous(*plan)
                        : ConnectRendezvousDaemon(*plan, *options);
  if (!rendezvous.ok()) return Fail(rendezvous.status(), 1);
  const JobAccess& access = (*rendezvous)->access();
  AssignAddresses(
      *plan, routes, iface_address,
      options->rendezvous_addr.empty() ? RendezvousPort(access) : 0);
  if (plan->verbose) {
    std::fprintf(stderr, "horovodrun: rendezvous on %s, job %s, %zu workers\n",
                 access.rendezvous_addr.c_str(), access.job_id.c_str(),
                 plan->workers.size());
  }

  char cwd[4096];
  std::string cwd_str = getcwd(cwd, sizeof(cwd)) ? cwd : "";
  std::vector<ProcessSpec> specs;
  std::vector<std::string> hosts;
  std::string ssh_exec = here + "/hvd-ssh-exec";
  std::string remote_exec = env.count("HVD_REMOTE_EXEC")
                                ? env.at("HVD_REMOTE_EXEC")
                                : here + "/hvd-remote-exec";
  for (const WorkerPlan& w : plan->workers) {
    std::vector<std::string> argv =
        w.local ? plan->command
                : RemoteArgv(w, *options, ssh_exec, remote_exec);
    specs.push_back({argv, WorkerEnvironment(env, *plan, w, access), cwd_str});
    hosts.push_back(w.host);
  }

  SupervisorOptions sup;
  sup.join_timeout = std::chrono::seconds(plan->join_timeout_s);
  sup.verbose = plan->verbose;
  sup.timestamps = options->prefix_output_with_timestamp;
  sup.output_dir = options->output_filename;
  sup.watchdog = here + "/hvd-remote-exec";
  sup.job_id = access.job_id;
  JobRendezvous* job = rendezvous->get();
  sup.joined_ranks = [job] { return job->JoinedRanks(); };
  auto watch =
      JobWatch::Start(*options, job, static_cast<int>(plan->workers.size()));
  if (!watch.ok()) return Fail(watch.status(), 1);
  auto spawner = MakeLocalSpawner();
  int code = Supervisor(sup).Run(specs, hosts, *spawner);
  (*watch)->Finish();
  job->End("the job finished with exit status " + std::to_string(code));
  return code;
}

}  // namespace
}  // namespace hvd::launcher

int main(int argc, char** argv) { return hvd::launcher::Main(argc, argv); }
