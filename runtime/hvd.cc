#include "hvd/hvd.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>

#include "common/logging.h"
#include "runtime/api_context.h"
#include "runtime/context.h"
#include "runtime/metrics.h"
#include "runtime/timeline.h"
#include "runtime/transport/nccl/nccl_backend.h"

namespace hvd {
using internal::RankList;

namespace {

// The one handle the C++ API owns; everything else hangs off it.
std::mutex g_mu;
std::unique_ptr<runtime::Context>
    g_context;  // guarded by g_mu for init/shutdown
// The generation this process last joined (0: none yet); the next init()
// joins the one after it.
int g_generation = 0;  // guarded by g_mu

runtime::Context* Current() { return g_context.get(); }

Status NotInitialized(const std::string& what) {
  return Status::FailedPrecondition(what, "call hvd::init() first");
}

// The job's process sets other than the job itself (id 0), by id: their
// ranks, and this rank's context in the set (null where it is not a
// member). Changed by init, add_process_set, remove_process_set and
// shutdown (which must not race with operations, like init itself).
struct ProcessSetEntry {
  std::vector<int> ranks;
  std::unique_ptr<runtime::Context> context;
};
std::mutex g_sets_mu;
std::map<int, ProcessSetEntry> g_sets;  // guarded by g_sets_mu
int g_next_set = 1;                     // guarded by g_mu
bool g_dynamic_sets = false;            // guarded by g_mu

Status CheckRanks(const std::vector<int>& ranks, int size) {
  const std::string where = "hvd::add_process_set";
  if (ranks.empty()) {
    return Status::InvalidArgument(where, "a process set needs ranks");
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size) {
      return Status::InvalidArgument(
          where, "rank " + std::to_string(ranks[i]) + " is not in the job (" +
                     std::to_string(size) + " ranks)");
    }
    if (i > 0 && ranks[i] == ranks[i - 1]) {
      return Status::InvalidArgument(
          where, "rank " + std::to_string(ranks[i]) + " is listed twice");
    }
  }
  return Status::Ok();
}

// Registers a set (g_mu held): every rank of the job calls it in the same
// order, so ids agree; members connect among themselves.
StatusOr<int> AddSetLocked(std::vector<int> ranks) {
  runtime::Context* c = g_context.get();
  std::sort(ranks.begin(), ranks.end());
  HVD_RETURN_IF_ERROR(CheckRanks(ranks, c->assignment().size));
  {
    std::lock_guard<std::mutex> lock(g_sets_mu);
    for (const auto& [id, entry] : g_sets) {
      if (entry.ranks == ranks) {
        return Status::InvalidArgument("hvd::add_process_set",
                                       "a process set of ranks " +
                                           RankList(ranks) + " exists (id " +
                                           std::to_string(id) + ")");
      }
    }
  }
  if (static_cast<int>(ranks.size()) == c->assignment().size) {
    return Status::InvalidArgument(
        "hvd::add_process_set",
        "ranks " + RankList(ranks) +
            " are the whole job: use the global process set (id 0)");
  }
  const int id = g_next_set++;
  ProcessSetEntry entry;
  entry.ranks = ranks;
  if (std::binary_search(ranks.begin(), ranks.end(), c->assignment().rank)) {
    HVD_ASSIGN_OR_RETURN(entry.context, c->CreateProcessSet(id, ranks));
  }
  std::lock_guard<std::mutex> lock(g_sets_mu);
  g_sets[id] = std::move(entry);
  return id;
}

}  // namespace

namespace internal {

std::string RankList(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(ranks[i]);
  }
  return s + "]";
}

StatusOr<runtime::Context*> ContextFor(int process_set,
                                       const std::string& what) {
  runtime::Context* c = Current();
  if (!c) return NotInitialized("hvd::" + what);
  if (process_set == 0) return c;
  std::lock_guard<std::mutex> lock(g_sets_mu);
  auto it = g_sets.find(process_set);
  if (it == g_sets.end()) {
    return Status::InvalidArgument(
        "hvd::" + what,
        "process set " + std::to_string(process_set) + " does not exist");
  }
  if (!it->second.context) {
    return Status::InvalidArgument(
        "hvd::" + what, "rank " + std::to_string(c->assignment().rank) +
                            " is not in process set " +
                            std::to_string(process_set) + " (ranks " +
                            RankList(it->second.ranks) + ")");
  }
  return it->second.context.get();
}

}  // namespace internal

Status init() { return init({}, false); }

Status init(const std::vector<std::vector<int>>& process_sets,
            bool dynamic_process_sets) {
  std::lock_guard<std::mutex> lock(g_mu);
  // Horovod's init() is idempotent: a second call keeps the job as it is.
  if (g_context) return Status::Ok();
  const settings::EnvMap env = settings::ProcessEnv();
  HVD_RETURN_IF_ERROR(ConfigureLogging(env));
  HVD_ASSIGN_OR_RETURN(runtime::WorkerConfig config,
                       runtime::WorkerConfig::FromEnv(env));
  runtime::Metrics::Process().set_enabled(config.metrics);
  HVD_ASSIGN_OR_RETURN(g_context,
                       runtime::Context::Create(config, g_generation));
  const rendezvous::Assignment& a = g_context->assignment();
  g_generation = a.generation;
  SetLogPrefix("rank " + std::to_string(a.rank));
  HVD_LOG(Debug) << "joined generation " << a.generation << " as rank "
                 << a.rank << " of " << a.size;
  g_dynamic_sets = dynamic_process_sets || config.dynamic_process_sets;
  g_next_set = 1;
  for (const std::vector<int>& ranks : process_sets) {
    StatusOr<int> id = AddSetLocked(ranks);
    if (!id.ok()) {
      {
        std::lock_guard<std::mutex> sets(g_sets_mu);
        g_sets.clear();
      }
      g_context.reset();
      return id.status();
    }
  }
  return Status::Ok();
}

StatusOr<int> add_process_set(const std::vector<int>& ranks) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_context) return NotInitialized("hvd::add_process_set");
  if (!g_dynamic_sets) {
    return Status::FailedPrecondition(
        "hvd::add_process_set",
        "process sets are fixed at init(); set HOROVOD_DYNAMIC_PROCESS_SETS=1 "
        "to add and remove them later");
  }
  return AddSetLocked(ranks);
}

Status remove_process_set(int process_set) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_context) return NotInitialized("hvd::remove_process_set");
  if (process_set == 0) {
    return Status::InvalidArgument("hvd::remove_process_set",
                                   "the global process set (id 0) stays");
  }
  if (!g_dynamic_sets) {
    return Status::FailedPrecondition(
        "hvd::remove_process_set",
        "process sets are fixed at init(); set HOROVOD_DYNAMIC_PROCESS_SETS=1 "
        "to add and remove them later");
  }
  std::unique_ptr<runtime::Context> gone;
  {
    std::lock_guard<std::mutex> sets(g_sets_mu);
    auto it = g_sets.find(process_set);
    if (it == g_sets.end()) {
      return Status::InvalidArgument(
          "hvd::remove_process_set",
          "process set " + std::to_string(process_set) + " does not exist");
    }
    gone = std::move(it->second.context);
    g_sets.erase(it);
  }
  gone.reset();  // its engine stops outside the lock
  return Status::Ok();
}

std::vector<int> process_set_ids() {
  std::lock_guard<std::mutex> lock(g_sets_mu);
  std::vector<int> ids;
  if (Current()) ids.push_back(0);
  for (const auto& [id, entry] : g_sets) ids.push_back(id);
  return ids;
}

std::vector<int> process_set_ranks(int process_set) {
  runtime::Context* c = Current();
  if (!c) return {};
  if (process_set == 0) {
    std::vector<int> all(c->assignment().size);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    return all;
  }
  std::lock_guard<std::mutex> lock(g_sets_mu);
  auto it = g_sets.find(process_set);
  return it == g_sets.end() ? std::vector<int>{} : it->second.ranks;
}

int process_set_rank(int process_set) {
  runtime::Context* c = Current();
  if (!c) return -1;
  if (process_set == 0) return c->assignment().rank;
  std::lock_guard<std::mutex> lock(g_sets_mu);
  auto it = g_sets.find(process_set);
  if (it == g_sets.end() || !it->second.context) return -1;
  return it->second.context->assignment().rank;
}

int process_set_size(int process_set) {
  runtime::Context* c = Current();
  if (!c) return -1;
  if (process_set == 0) return c->assignment().size;
  std::lock_guard<std::mutex> lock(g_sets_mu);
  auto it = g_sets.find(process_set);
  return it == g_sets.end() ? -1 : static_cast<int>(it->second.ranks.size());
}

bool is_initialized() { return Current() != nullptr; }

std::shared_ptr<rendezvous::RendezvousClient> job_rendezvous_client() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_context ? g_context->rendezvous_client() : nullptr;
}

bool hosts_changed_since_join() {
  runtime::Context* c = Current();
  return c && c->MembershipChanged();
}

#define HVD_ASSIGNMENT_GETTER(name)       \
  int name() {                            \
    runtime::Context* c = Current();      \
    return c ? c->assignment().name : -1; \
  }
HVD_ASSIGNMENT_GETTER(rank)
HVD_ASSIGNMENT_GETTER(size)
HVD_ASSIGNMENT_GETTER(local_rank)
HVD_ASSIGNMENT_GETTER(local_size)
HVD_ASSIGNMENT_GETTER(cross_rank)
HVD_ASSIGNMENT_GETTER(cross_size)
HVD_ASSIGNMENT_GETTER(gpu)

int nccl_built() { return runtime::NcclVersionCode(); }
#undef HVD_ASSIGNMENT_GETTER

Status start_timeline(const std::string& path, bool mark_cycles) {
  std::lock_guard<std::mutex> lock(g_mu);
  runtime::Context* c = Current();
  if (!c) return NotInitialized("hvd::start_timeline");
  c->engine();  // rank 0's timeline exists once the engine does
  runtime::Timeline* tl = c->timeline();
  return tl ? tl->Open(path, mark_cycles) : Status::Ok();
}

Status stop_timeline() {
  std::lock_guard<std::mutex> lock(g_mu);
  runtime::Context* c = Current();
  if (!c) return Status::Ok();
  if (runtime::Timeline* tl = c->timeline()) tl->Close();
  return Status::Ok();
}

Status shutdown() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::map<int, ProcessSetEntry> sets;
  {
    std::lock_guard<std::mutex> lock(g_sets_mu);
    sets.swap(g_sets);
  }
  sets.clear();  // the sets' engines stop before the job's
  g_context.reset();
  return Status::Ok();
}

}  // namespace hvd
