// The engine's settings, as WorkerConfig reads them from the settings
// table (defaults there, declared once) and the context completes them
// with what it learns (rank, size, timeline, transport choices).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "common/setting_keys.h"
#include "runtime/autotune.h"

namespace hvd::runtime {

class Timeline;

// The stall inspector (rank 0): warn about tensors some ranks submitted
// and others not for longer than the warning time, naming the missing
// ranks; after the shutdown time (0: never) end the job with an error.
struct StallOptions {
  bool check = true;  // !HOROVOD_STALL_CHECK_DISABLE
  // HOROVOD_STALL_CHECK_TIME_SECONDS, HOROVOD_STALL_SHUTDOWN_TIME_SECONDS
  std::chrono::milliseconds warning{
      settings::Default(settings::key::kStallWarningTime)};
  std::chrono::milliseconds shutdown{0};
  // Where warnings go; default: the log at WARNING (tests catch them).
  std::function<void(const std::string&)> on_warning;
  // Asks for every rank's flight recorder (the launcher gathers them and
  // reports): on the first warning of a stall, and (`final`) before a
  // stall past the shutdown time ends the job, when it returns once the
  // report is out or after a bounded wait. Empty: not asked.
  std::function<void(const std::string& stalled, bool final)> ask_dump;
};

struct EngineOptions {
  int rank = 0;
  int size = 1;
  // HOROVOD_FUSION_THRESHOLD, in bytes.
  size_t fusion_threshold_bytes =
      size_t(settings::Default(settings::key::kFusionThreshold));
  // HOROVOD_CYCLE_TIME. Zero (the default): a cycle starts as soon as a
  // rank has something new. Positive: cycles are paced as in Horovod, each
  // at least this long after the previous one started, so whatever arrives
  // in between is negotiated (and fused) together; the first request after
  // a quiet spell longer than that still starts at once.
  std::chrono::microseconds cycle_time{0};
  // Response cache entries (HOROVOD_CACHE_CAPACITY); 0 disables it.
  size_t cache_capacity =
      size_t(settings::Default(settings::key::kCacheCapacity));
  StallOptions stall;
  // Rank 0's timeline (recording or not: it may start and stop at any
  // time), or null on the other ranks. Not owned; outlives the engine.
  Timeline* timeline = nullptr;
  // HOROVOD_DISABLE_GROUP_FUSION: a grouped allreduce's tensors fuse only
  // with each other.
  bool disable_group_fusion = false;
  // A rank sends the data of pending allreduces of at most this many bytes
  // in its negotiation message, up to this many bytes in all per cycle.
  size_t eager_tensor_bytes = 16u << 10;
  size_t eager_cycle_bytes = 64u << 10;
  // --autotune (rank 0 tunes; every rank applies) with its settings, and
  // where rank 0 writes its CSV log ("" for none). `tune` also says which
  // values the user gave (they stay fixed).
  bool autotune = false;
  TuneOptions tune;
  std::string autotune_log;
  // The CPU the engine thread pins itself to (HOROVOD_THREAD_AFFINITY), or
  // -1 for the process's own binding.
  int thread_cpu = -1;
  // The engine thread runs as a batch thread (SCHED_BATCH): where the
  // host's ranks do not outnumber its CPUs, so that the thread shares
  // CPUs with its own callers rather than with other ranks.
  bool batch_thread = false;
  // Whether the backend runs allreduce / allgather hierarchically (what
  // autotune starts from).
  bool hierarchical_allreduce = false, hierarchical_allgather = false;
  // HVD_FLIGHT_RECORDER_ENTRIES: the collectives the flight recorder keeps
  // (0: none); and the process set this engine serves (0: the job).
  size_t flight_recorder_entries =
      size_t(settings::Default(settings::key::kFlightRecorderEntries));
  int process_set = 0;
  // Collectives in flight failed (a lost peer, a stall shutdown): called
  // once the flight recorder says so and before their callers learn it,
  // so that the record can be left where the launcher finds it after the
  // process is gone. Empty: nothing.
  std::function<void()> on_collectives_failed;
};

}  // namespace hvd::runtime
