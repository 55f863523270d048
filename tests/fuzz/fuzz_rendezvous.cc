// The rendezvous service's request handling without the network: the
// input's protobuf messages are decoded and fed to a JobTable the way the
// server feeds it (CreateJob's hosts, each session op through the same
// RunImmediateOp, blocking ops registered with the deadline their timeout
// gives), then every pending wait is expired (or ended with the job). Checks:
// each op gets exactly one answer, and none is left waiting once the job has
// ended.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "rendezvous/job_table.h"
#include "rendezvous/service_util.h"
#include "tests/fuzz/rendezvous_fuzz.pb.h"

namespace {

using hvd::rendezvous::Clock;
using hvd::rendezvous::JobTable;
namespace v1 = hvd::rendezvous::v1;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hvd::rendezvous::fuzz::Input input;
  if (!input.ParseFromArray(data, static_cast<int>(size))) return 0;
  hvd::rendezvous::TableLimits limits;
  // Small limits, so that the fuzzer reaches them.
  limits.max_jobs = 4;
  limits.max_keys_per_job = 64;
  limits.max_value_bytes = 4096;
  limits.max_job_bytes = 1 << 16;
  JobTable table(limits);
  auto job =
      table.CreateJob(hvd::rendezvous::HostsFromProto(input.create().hosts()),
                      input.create().size(), input.elastic());
  if (!job.ok()) return 0;
  const std::string& id = job->job_id;
  for (const std::string& t : input.tokens()) {
    if (table.Authenticate(id, t).ok() != (t == job->token)) std::abort();
  }
  if (!table.Authenticate(id, job->token).ok()) std::abort();

  // Answers by op (op ids may repeat in a batch: counted per occurrence).
  int asked = 0;
  auto answered = std::make_shared<int>(0);
  for (int b = 0; b < input.batches_size(); ++b) {
    if (b < input.memberships_size()) {
      const auto& m = input.memberships(b);
      (void)table.SetMembership(id, hvd::rendezvous::HostsFromProto(m.hosts()),
                                m.size());
    }
    for (const v1::Op& op : input.batches(b).ops()) {
      ++asked;
      if (auto r = hvd::rendezvous::RunImmediateOp(table, id, op)) {
        ++*answered;
        continue;
      }
      auto once = [answered](auto&&) { ++*answered; };
      const int64_t timeout = op.has_join()   ? op.join().timeout_ms()
                              : op.has_wait() ? op.wait().timeout_ms()
                                              : op.barrier().timeout_ms();
      auto deadline = hvd::rendezvous::DeadlineFrom(timeout);
      if (!deadline.ok()) {  // the server answers this at once
        ++*answered;
        continue;
      }
      switch (op.kind_case()) {
        case v1::Op::kJoin:
          table.JoinWait(id, op.join().host(), op.join().slot(),
                         op.join().previous_generation(), *deadline, once);
          break;
        case v1::Op::kWait:
          table.Wait(id, {op.wait().keys().begin(), op.wait().keys().end()},
                     *deadline, once);
          break;
        case v1::Op::kBarrier:
          table.Barrier(id, op.barrier().name(), op.barrier().rank(), *deadline,
                        once);
          break;
        default:
          std::abort();  // RunImmediateOp answers every other kind
      }
    }
    (void)table.KeepAlive(id);
    (void)table.Info(id);
    (void)table.JoinedRanks(id);
    (void)table.GetPrefix(id, "hvd/");
  }
  // Past the longest deadline a request may ask for (a day), nothing may
  // still wait.
  if (input.end_job()) (void)table.EndJob(id, "the fuzzer ended it");
  table.Expire(Clock::now() + std::chrono::hours(25));
  if (*answered != asked) std::abort();
  return 0;
}
