// The worker's side of the launcher's host updates (rendezvous/
// host_updates.h): reading the count, waiting for the next one, and the
// listener that hands them to a State.
#include "common/parse.h"
#include "common/setting_keys.h"
#include "common/settings.h"
#include "hvd/elastic.h"
#include "rendezvous/client.h"
#include "rendezvous/host_updates.h"

namespace hvd {
// The job's rendezvous client, null outside init()/shutdown() (hvd.cc).
std::shared_ptr<rendezvous::RendezvousClient> job_rendezvous_client();
}  // namespace hvd

namespace hvd::elastic {
namespace {

// How long one wait of the listener lasts: also how long its destructor
// may take.
constexpr std::chrono::milliseconds kListenWait{500};
// The pause before trying again while there is no job (during a reset).
constexpr std::chrono::milliseconds kNoJobPause{100};

StatusOr<std::shared_ptr<rendezvous::RendezvousClient>> Client(
    const char* what) {
  auto client = job_rendezvous_client();
  if (!client) {
    return Status::FailedPrecondition(what, "call hvd::init() first");
  }
  return client;
}

}  // namespace

StatusOr<int> host_updates_announced() {
  HVD_ASSIGN_OR_RETURN(auto client, Client("hvd::elastic::host_updates"));
  auto count = client->Get(rendezvous::kHostUpdateCountKey);
  if (count.status().code() == StatusCode::kNotFound) return 0;
  HVD_RETURN_IF_ERROR(count.status());
  HVD_ASSIGN_OR_RETURN(
      int64_t n,
      ParseInt64(*count, rendezvous::kHostUpdateCountKey, 0, INT32_MAX));
  return static_cast<int>(n);
}

StatusOr<std::optional<HostUpdate>> wait_host_update(
    int n, std::chrono::milliseconds wait) {
  HVD_ASSIGN_OR_RETURN(auto client, Client("hvd::elastic::wait_host_update"));
  auto got = client->Wait({rendezvous::HostUpdateKey(n)}, wait);
  if (got.status().code() == StatusCode::kDeadlineExceeded) {
    return std::optional<HostUpdate>();
  }
  HVD_RETURN_IF_ERROR(got.status());
  HVD_ASSIGN_OR_RETURN(rendezvous::HostUpdate u,
                       rendezvous::ParseHostUpdate(got->at(0)));
  return std::optional<HostUpdate>(
      HostUpdate{u.timestamp, static_cast<HostUpdateResult>(u.result)});
}

HostUpdateListener::HostUpdateListener(State& state) : state_(state) {
  // Only an elastic job's launcher makes updates (HOROVOD_ELASTIC=1).
  const settings::EnvMap env = settings::ProcessEnv();
  auto elastic = settings::Reader(env).Get(settings::key::kElastic);
  if (elastic.ok() && *elastic) thread_ = std::thread([this] { Loop(); });
}

HostUpdateListener::~HostUpdateListener() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void HostUpdateListener::Loop() {
  // Updates made before the listener started are not its to hand on.
  std::optional<int> seen;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    if (!seen) {
      auto n = host_updates_announced();
      if (n.ok()) {
        seen = *n;
      } else {
        std::this_thread::sleep_for(kNoJobPause);
      }
      continue;
    }
    auto update = wait_host_update(*seen + 1, kListenWait);
    if (!update.ok()) {
      // No job during a reset, or the rendezvous is away (its client says
      // so once): try again; the membership check at commit still sees
      // any change.
      std::this_thread::sleep_for(kNoJobPause);
      continue;
    }
    if (*update) {
      ++*seen;
      state_.on_hosts_updated((*update)->timestamp, (*update)->result);
    }
  }
}

}  // namespace hvd::elastic
