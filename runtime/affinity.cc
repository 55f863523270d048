#include "runtime/affinity.h"

#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>

namespace hvd::runtime {
namespace {

cpu_set_t SetOf(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  }
  return set;
}

}  // namespace

StatusOr<std::vector<int>> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    return Status::Internal("sched_getaffinity", std::strerror(errno));
  }
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

std::vector<int> CpuBlock(const std::vector<int>& allowed, int local_rank,
                          int local_size) {
  const int n = static_cast<int>(allowed.size());
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size ||
      n < local_size) {
    return {};
  }
  // Blocks differ by at most one CPU when they do not divide evenly.
  const int begin =
      static_cast<int>(static_cast<long>(local_rank) * n / local_size);
  const int end =
      static_cast<int>(static_cast<long>(local_rank + 1) * n / local_size);
  return std::vector<int>(allowed.begin() + begin, allowed.begin() + end);
}

Status BindProcess(const std::vector<int>& cpus) {
  const cpu_set_t set = SetOf(cpus);
  // Threads started before (gRPC's, a user's) as well as the caller. A
  // listing of /proc/self/task can skip an entry while other threads end,
  // so list again until a pass finds nobody new.
  std::set<pid_t> done;
  Status first;
  for (int pass = 0; pass < 10; ++pass) {
    DIR* dir = opendir("/proc/self/task");
    if (!dir) {
      return Status::Internal("/proc/self/task", std::strerror(errno));
    }
    bool found = false;
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      const pid_t tid = static_cast<pid_t>(std::atoi(e->d_name));
      if (!done.insert(tid).second) continue;
      found = true;
      // A thread that ended meanwhile (ESRCH) needs nothing.
      if (sched_setaffinity(tid, sizeof(set), &set) != 0 && errno != ESRCH &&
          first.ok()) {
        first = Status::Internal("binding to CPUs " + CpuList(cpus),
                                 std::strerror(errno));
      }
    }
    closedir(dir);
    if (!found) break;
  }
  return first;
}

Status BindThread(int cpu) {
  const cpu_set_t set = SetOf({cpu});
  if (sched_setaffinity(static_cast<pid_t>(syscall(SYS_gettid)), sizeof(set),
                        &set) != 0) {
    return Status::InvalidArgument("HOROVOD_THREAD_AFFINITY",
                                   "cannot pin the engine thread to CPU " +
                                       std::to_string(cpu) + ": " +
                                       std::strerror(errno));
  }
  return Status::Ok();
}

std::string CpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace hvd::runtime
