#include "launcher/runners/srun_step.h"

#include <regex>

#include "common/parse.h"
#include "common/worker_env.h"

namespace hvd::launcher {
namespace {

StatusOr<std::string> Need(const std::map<std::string, std::string>& env,
                           const std::string& key) {
  auto it = env.find(key);
  if (it == env.end() || it->second.empty()) {
    return Status::FailedPrecondition(
        key,
        "is not set: hvd-remote-exec --srun runs as a task of the srun "
        "step horovodrun starts");
  }
  return it->second;
}

constexpr char kMarker[] = "[hvd-exit] ";

}  // namespace

StatusOr<SrunPlacement> PlaceSrunTask(
    const std::map<std::string, std::string>& env) {
  HVD_ASSIGN_OR_RETURN(std::string hosts, Need(env, worker_env::kTaskHosts));
  HVD_ASSIGN_OR_RETURN(std::string procid, Need(env, "SLURM_PROCID"));
  HVD_ASSIGN_OR_RETURN(int64_t task,
                       ParseInt64(procid, "SLURM_PROCID", 0, 1 << 24));
  HVD_ASSIGN_OR_RETURN(std::string node, Need(env, "SLURMD_NODENAME"));
  HVD_ASSIGN_OR_RETURN(SrunPlacement p, rendezvous::PlaceTask(hosts, task));
  if (p.host != node) {
    return Status::FailedPrecondition(
        "srun", "ran task " + procid + " on " + node +
                    " but the job has it on " + p.host +
                    " (a SLURM_HOSTFILE or --distribution of the "
                    "environment overrode horovodrun's?)");
  }
  return p;
}

std::vector<std::string> SrunWorkerEnv(const SrunPlacement& p) {
  const rendezvous::Assignment& a = p.assignment;
  return {
      worker_env::Entry(worker_env::kHost, p.host),
      worker_env::Entry(worker_env::kSlot, std::to_string(p.slot)),
      worker_env::Entry(worker_env::kHostname, p.host),
      worker_env::Entry(worker_env::kRank, std::to_string(a.rank)),
      worker_env::Entry(worker_env::kSize, std::to_string(a.size)),
      worker_env::Entry(worker_env::kLocalRank, std::to_string(a.local_rank)),
      worker_env::Entry(worker_env::kLocalSize, std::to_string(a.local_size)),
      worker_env::Entry(worker_env::kCrossRank, std::to_string(a.cross_rank)),
      worker_env::Entry(worker_env::kCrossSize, std::to_string(a.cross_size))};
}

std::vector<std::string> SrunArgv(const std::string& srun,
                                  const std::vector<HostSpec>& hosts,
                                  const std::string& wrapper,
                                  const std::vector<std::string>& command) {
  int tasks = 0;
  for (const HostSpec& h : hosts) tasks += h.slots;
  std::vector<std::string> argv = {
      srun, "--label", "--kill-on-bad-exit=1", "--input=none",
      // Task by task, the nodes of SLURM_HOSTFILE (srun refuses a node
      // list shorter than the tasks with this distribution).
      "--distribution=arbitrary", "--ntasks=" + std::to_string(tasks), wrapper,
      "--srun", "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::string SrunHostfile(const std::vector<HostSpec>& hosts) {
  std::string out;
  for (const HostSpec& h : hosts) {
    for (int s = 0; s < h.slots; ++s) out += h.host + "\n";
  }
  return out;
}

bool ParseSrunTaskError(const std::string& line, std::string* node,
                        std::string* what) {
  static const std::regex kLine(
      R"(^srun: error: (\S+): tasks? ([0-9,\-]+): (.*)$)");
  std::smatch m;
  if (!std::regex_match(line, m, kLine)) return false;
  *node = m[1];
  *what =
      "task" +
      std::string(m[2].str().find_first_of(",-") == std::string::npos ? " "
                                                                      : "s ") +
      m[2].str() + ": " + m[3].str();
  return true;
}

bool SplitSrunLabel(std::string_view line, int* task, size_t* text_at) {
  size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  size_t digits = i;
  int n = 0;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9' &&
         i - digits < 9) {
    n = n * 10 + (line[i] - '0');
    ++i;
  }
  if (i == digits || i >= line.size() || line[i] != ':') return false;
  ++i;
  if (i < line.size() && line[i] == ' ') ++i;
  *task = n;
  *text_at = i;
  return true;
}

std::string SrunExitMarker(int code) {
  return std::string(kMarker) + std::to_string(code);
}

bool ParseSrunExitMarker(std::string_view text, int* code) {
  if (text.rfind(kMarker, 0) != 0) return false;
  auto n = ParseInt64(std::string(text.substr(sizeof(kMarker) - 1)),
                      "exit marker", 0, 1 << 16);
  if (!n.ok()) return false;
  *code = static_cast<int>(*n);
  return true;
}

}  // namespace hvd::launcher
