// The variables horovodrun gives its workers beyond the settings table
// (common/settings.h holds every tuning knob and its variable): where the
// rendezvous is, which job a worker belongs to and how it proves it, and
// its place in the job. Declared once: the launcher writes them and the
// worker reads them by these names only. Tests check both sides against
// kAll (tests/launcher/plan_test.cc, tests/runtime/worker_config_test.cc).
#pragma once

#include <string>

namespace hvd::worker_env {

// The rendezvous and the job.
inline constexpr char kRendezvousAddr[] = "HVD_RENDEZVOUS_ADDR";
inline constexpr char kJobId[] = "HVD_JOB_ID";
inline constexpr char kJobToken[] = "HVD_JOB_TOKEN";
// PEM text, not paths, so that it reaches workers on any host.
inline constexpr char kTlsCa[] = "HVD_RENDEZVOUS_TLS_CA";
inline constexpr char kTlsCert[] = "HVD_RENDEZVOUS_TLS_CERT";
inline constexpr char kTlsKey[] = "HVD_RENDEZVOUS_TLS_KEY";

// The worker's place in the plan: its host and slot, or (one srun or
// mpirun step starting every worker) the plan's hosts and slots in rank
// order, from which each task finds its own.
inline constexpr char kHost[] = "HVD_HOST";
inline constexpr char kSlot[] = "HVD_SLOT";
inline constexpr char kTaskHosts[] = "HVD_TASK_HOSTS";
// The address Gloo binds ("auto": the one that reaches the rendezvous).
inline constexpr char kGlooAddr[] = "HVD_GLOO_ADDR";
// How often a worker reports its figures (--metrics-port, --monitor).
inline constexpr char kMetricsIntervalMs[] = "HVD_METRICS_INTERVAL_MS";

// Horovod's own, which programs read as in Horovod (libhvd too: the rank
// it is to join as, checked against the rendezvous' answer).
inline constexpr char kRank[] = "HOROVOD_RANK";
inline constexpr char kSize[] = "HOROVOD_SIZE";
inline constexpr char kLocalRank[] = "HOROVOD_LOCAL_RANK";
inline constexpr char kLocalSize[] = "HOROVOD_LOCAL_SIZE";
inline constexpr char kCrossRank[] = "HOROVOD_CROSS_RANK";
inline constexpr char kCrossSize[] = "HOROVOD_CROSS_SIZE";
inline constexpr char kHostname[] = "HOROVOD_HOSTNAME";
inline constexpr char kController[] = "HOROVOD_CONTROLLER";
inline constexpr char kCpuOperations[] = "HOROVOD_CPU_OPERATIONS";
inline constexpr char kStartTimeout[] = "HOROVOD_START_TIMEOUT";

// "NAME=value", as an environment entry.
inline std::string Entry(const char* name, const std::string& value) {
  return std::string(name) + "=" + value;
}

// Who reads a variable: libhvd, or only the user's program (as Horovod
// sets it for scripts that look).
enum class Reader { kLibhvd, kProgram };

struct Var {
  const char* name;
  Reader reader;
  // Differs between the tasks of one srun or mpirun step, so each task's
  // wrapper sets it from its own place rather than the step's environment.
  bool per_task;
};

inline constexpr Var kAll[] = {
    {kRendezvousAddr, Reader::kLibhvd, true},
    {kJobId, Reader::kLibhvd, false},
    {kJobToken, Reader::kLibhvd, false},
    {kTlsCa, Reader::kLibhvd, false},
    {kTlsCert, Reader::kLibhvd, false},
    {kTlsKey, Reader::kLibhvd, false},
    {kHost, Reader::kLibhvd, true},
    {kSlot, Reader::kLibhvd, true},
    {kTaskHosts, Reader::kLibhvd, false},
    {kGlooAddr, Reader::kLibhvd, true},
    {kMetricsIntervalMs, Reader::kLibhvd, false},
    {kRank, Reader::kLibhvd, true},
    {kSize, Reader::kLibhvd, true},
    {kLocalRank, Reader::kLibhvd, true},
    {kLocalSize, Reader::kLibhvd, true},
    {kCrossRank, Reader::kLibhvd, true},
    {kCrossSize, Reader::kLibhvd, true},
    {kHostname, Reader::kProgram, true},
    {kController, Reader::kProgram, false},
    {kCpuOperations, Reader::kProgram, false},
    {kStartTimeout, Reader::kProgram, false},
};

}  // namespace hvd::worker_env
