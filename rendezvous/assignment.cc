#include "rendezvous/assignment.h"

#include <unordered_set>

#include "common/parse.h"
#include "common/worker_env.h"

namespace hvd::rendezvous {

Status ValidateHosts(const std::vector<HostSlots>& hosts, int size) {
  if (hosts.empty()) return Status::InvalidArgument("hosts", "list is empty");
  std::unordered_set<std::string> seen;
  long long total = 0;
  for (const HostSlots& h : hosts) {
    if (h.host.empty()) {
      return Status::InvalidArgument("hosts", "a host name is empty");
    }
    if (!seen.insert(h.host).second) {
      return Status::InvalidArgument(
          "hosts", "'" + h.host +
                       "' is listed twice; give it once with the "
                       "sum of its slots");
    }
    if (h.slots < 1) {
      return Status::InvalidArgument(
          "hosts", "'" + h.host + "' has " + std::to_string(h.slots) +
                       " slots; each host needs at least 1");
    }
    if (h.gpus < 0) {
      return Status::InvalidArgument(
          "hosts", "'" + h.host + "' has a negative GPU count");
    }
    total += h.slots;
  }
  if (size < 1) {
    return Status::InvalidArgument(
        "size", "must be at least 1 (got " + std::to_string(size) + ")");
  }
  if (total != size) {
    return Status::InvalidArgument(
        "size", std::to_string(size) + " does not match the " +
                    std::to_string(total) + " slots of the hosts");
  }
  return Status::Ok();
}

std::vector<Assignment> ComputeAssignments(
    const std::vector<HostSlots>& hosts) {
  int size = 0;
  int max_slots = 0;
  for (const HostSlots& h : hosts) {
    size += h.slots;
    max_slots = std::max(max_slots, h.slots);
  }
  // cross_sizes[L] = number of hosts with a slot L.
  std::vector<int> cross_sizes(max_slots, 0);
  for (const HostSlots& h : hosts) {
    for (int l = 0; l < h.slots; ++l) ++cross_sizes[l];
  }
  std::vector<int> next_cross(max_slots, 0);
  std::vector<Assignment> out;
  out.reserve(size);
  int rank = 0;
  for (const HostSlots& h : hosts) {
    for (int l = 0; l < h.slots; ++l) {
      Assignment a;
      a.rank = rank++;
      a.size = size;
      a.local_rank = l;
      a.local_size = h.slots;
      a.cross_rank = next_cross[l]++;
      a.cross_size = cross_sizes[l];
      a.gpu = h.gpus > 0 ? l % h.gpus : -1;
      out.push_back(a);
    }
  }
  return out;
}

StatusOr<TaskPlace> PlaceTask(const std::string& task_hosts, int64_t task) {
  std::vector<HostSlots> hosts;
  int total = 0;
  size_t start = 0;
  while (start <= task_hosts.size()) {
    size_t end = task_hosts.find(',', start);
    if (end == std::string::npos) end = task_hosts.size();
    const std::string item = task_hosts.substr(start, end - start);
    start = end + 1;
    const size_t colon = item.rfind(':');
    int slots = 0;
    if (colon != std::string::npos) {
      auto n = ParseInt64(item.substr(colon + 1), worker_env::kTaskHosts, 1,
                          1 << 20);
      if (n.ok()) slots = static_cast<int>(*n);
    }
    std::string host = colon == std::string::npos ? "" : item.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    if (host.empty() || slots == 0) {
      return Status::InvalidArgument(
          worker_env::kTaskHosts,
          "'" + item + "' is not HOST:SLOTS (got '" + task_hosts + "')");
    }
    hosts.push_back({host, slots, 0});
    total += slots;
  }
  HVD_RETURN_IF_ERROR(ValidateHosts(hosts, total));
  if (task < 0 || task >= total) {
    return Status::FailedPrecondition(
        "task " + std::to_string(task),
        "is past the job's " + std::to_string(total) + " workers");
  }
  TaskPlace p;
  int first = 0;
  for (const HostSlots& h : hosts) {
    if (task < first + h.slots) {
      p.host = h.host;
      p.slot = static_cast<int>(task) - first;
      break;
    }
    first += h.slots;
  }
  p.assignment = ComputeAssignments(hosts)[task];
  return p;
}

}  // namespace hvd::rendezvous
