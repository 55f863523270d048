// The settings table's keys, typed: each names one row of common/settings.cc
// and says what Reader::Get and Default give for it. Code names a setting
// by these constants only, so a misspelled key or a use of the wrong type
// does not compile; settings_test checks every constant against its row
// (kind and unit) and that every row has one.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/settings.h"

namespace hvd::settings {
namespace key {

using std::chrono::microseconds;
using std::chrono::seconds;

// Launch and rendezvous.
inline constexpr Key<seconds> kStartTimeout{"start_timeout"};
inline constexpr Key<seconds> kJoinTimeout{"join_timeout"};
inline constexpr Key<seconds> kElasticTimeout{"elastic_timeout"};
inline constexpr Key<std::string> kNetworkInterface{"network_interface"};
// Tuning. The fusion threshold in bytes (the variable's unit).
inline constexpr Key<int64_t> kFusionThreshold{"fusion_threshold_mb"};
inline constexpr Key<microseconds> kCycleTime{"cycle_time_ms"};
inline constexpr Key<int64_t> kCacheCapacity{"cache_capacity"};
inline constexpr Key<std::optional<bool>> kHierarchicalAllreduce{
    "hierarchical_allreduce"};
inline constexpr Key<std::optional<bool>> kHierarchicalAllgather{
    "hierarchical_allgather"};
inline constexpr Key<bool> kDisableGroupFusion{"disable_group_fusion"};
inline constexpr Key<bool> kDynamicProcessSets{"dynamic_process_sets"};
inline constexpr Key<bool> kElastic{"elastic"};
inline constexpr Key<bool> kMetricsDisable{"metrics_disable"};
inline constexpr Key<bool> kShmDisable{"shm_disable"};
inline constexpr Key<bool> kTcpRingDisable{"tcp_ring_disable"};
inline constexpr Key<int64_t> kTcpStreams{"tcp_streams"};
inline constexpr Key<int64_t> kTcpStreamBytes{"tcp_stream_bytes"};
inline constexpr Key<int64_t> kTcpDoublingBytes{"tcp_doubling_bytes"};
inline constexpr Key<int64_t> kTcpHalvingBytes{"tcp_halving_bytes"};
inline constexpr Key<int64_t> kControlMeshRanks{"control_mesh_ranks"};
inline constexpr Key<bool> kControlHostLeaders{"control_host_leaders"};
inline constexpr Key<int64_t> kShmSingleCopyThreshold{
    "shm_single_copy_threshold"};
inline constexpr Key<int64_t> kShmSingleCopyLimit{"shm_single_copy_limit"};
// Autotune.
inline constexpr Key<bool> kAutotune{"autotune"};
inline constexpr Key<std::string> kAutotuneLogFile{"autotune_log_file"};
inline constexpr Key<int64_t> kAutotuneWarmupSamples{"autotune_warmup_samples"};
inline constexpr Key<int64_t> kAutotuneStepsPerSample{
    "autotune_steps_per_sample"};
inline constexpr Key<int64_t> kAutotuneMaxSamples{
    "autotune_bayes_opt_max_samples"};
inline constexpr Key<double> kAutotuneNoise{"autotune_gaussian_process_noise"};
inline constexpr Key<std::string> kAutotuneStart{"autotune_start"};
// Timeline and stall check.
inline constexpr Key<std::string> kTimelineFilename{"timeline_filename"};
inline constexpr Key<bool> kTimelineMarkCycles{"timeline_mark_cycles"};
inline constexpr Key<bool> kNoStallCheck{"no_stall_check"};
inline constexpr Key<seconds> kStallWarningTime{
    "stall_check_warning_time_seconds"};
inline constexpr Key<seconds> kStallShutdownTime{
    "stall_check_shutdown_time_seconds"};
inline constexpr Key<int64_t> kFlightRecorderEntries{"flight_recorder_entries"};
// Library.
inline constexpr Key<seconds> kGlooTimeout{"gloo_timeout_seconds"};
inline constexpr Key<int64_t> kNumNcclStreams{"num_nccl_streams"};
inline constexpr Key<std::vector<int64_t>> kThreadAffinity{"thread_affinity"};
inline constexpr Key<std::string> kBindTo{"bind_to"};
// Logging.
inline constexpr Key<std::string> kLogLevel{"log_level"};
inline constexpr Key<bool> kLogWithoutTimestamp{"log_without_timestamp"};

}  // namespace key

// A key with what its type needs of its row, for settings_test.
struct KeyShape {
  const char* name;
  // The kinds the type reads (a string reads text and choices alike).
  std::vector<Kind> kinds;
  // The row's unit a duration needs ("s", "ms"); "" for any other type.
  const char* time_unit;
};

template <typename T>
KeyShape ShapeOf(Key<T> k) {
  if constexpr (std::is_same_v<T, std::chrono::seconds>) {
    return {k.name, {Kind::kInt}, "s"};
  } else if constexpr (std::is_same_v<T, std::chrono::microseconds>) {
    return {k.name, {Kind::kDouble}, "ms"};
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return {k.name, {Kind::kInt}, ""};
  } else if constexpr (std::is_same_v<T, double>) {
    return {k.name, {Kind::kDouble}, ""};
  } else if constexpr (std::is_same_v<T, bool> ||
                       std::is_same_v<T, std::optional<bool>>) {
    return {k.name, {Kind::kSwitch}, ""};
  } else if constexpr (std::is_same_v<T, std::string>) {
    return {k.name, {Kind::kString, Kind::kChoice}, ""};
  } else {
    static_assert(std::is_same_v<T, std::vector<int64_t>>);
    return {k.name, {Kind::kIntList}, ""};
  }
}

// Every key above.
inline std::vector<KeyShape> AllKeys() {
  using namespace key;  // NOLINT: the list names them all
  return {ShapeOf(kStartTimeout),
          ShapeOf(kJoinTimeout),
          ShapeOf(kElasticTimeout),
          ShapeOf(kNetworkInterface),
          ShapeOf(kFusionThreshold),
          ShapeOf(kCycleTime),
          ShapeOf(kCacheCapacity),
          ShapeOf(kHierarchicalAllreduce),
          ShapeOf(kHierarchicalAllgather),
          ShapeOf(kDisableGroupFusion),
          ShapeOf(kDynamicProcessSets),
          ShapeOf(kElastic),
          ShapeOf(kMetricsDisable),
          ShapeOf(kShmDisable),
          ShapeOf(kTcpRingDisable),
          ShapeOf(kTcpStreams),
          ShapeOf(kTcpStreamBytes),
          ShapeOf(kTcpDoublingBytes),
          ShapeOf(kTcpHalvingBytes),
          ShapeOf(kControlMeshRanks),
          ShapeOf(kControlHostLeaders),
          ShapeOf(kShmSingleCopyThreshold),
          ShapeOf(kShmSingleCopyLimit),
          ShapeOf(kAutotune),
          ShapeOf(kAutotuneLogFile),
          ShapeOf(kAutotuneWarmupSamples),
          ShapeOf(kAutotuneStepsPerSample),
          ShapeOf(kAutotuneMaxSamples),
          ShapeOf(kAutotuneNoise),
          ShapeOf(kAutotuneStart),
          ShapeOf(kTimelineFilename),
          ShapeOf(kTimelineMarkCycles),
          ShapeOf(kNoStallCheck),
          ShapeOf(kStallWarningTime),
          ShapeOf(kStallShutdownTime),
          ShapeOf(kFlightRecorderEntries),
          ShapeOf(kGlooTimeout),
          ShapeOf(kNumNcclStreams),
          ShapeOf(kThreadAffinity),
          ShapeOf(kBindTo),
          ShapeOf(kLogLevel),
          ShapeOf(kLogWithoutTimestamp)};
}

}  // namespace hvd::settings
