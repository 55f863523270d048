#include "runtime/engine/fusion.h"

namespace hvd::runtime {

bool Fusable(const Request& a, const Request& b, bool by_group) {
  return a.type == OpType::kAllreduce && b.type == OpType::kAllreduce &&
         a.device < 0 && b.device < 0 && a.dtype == b.dtype &&
         a.reduce == b.reduce && a.average == b.average &&
         a.adasum == b.adasum && a.prescale == b.prescale &&
         a.postscale == b.postscale && (!by_group || a.group == b.group);
}

std::vector<FusionGroup> PlanFusion(const std::vector<const Request*>& ready,
                                    size_t threshold_bytes, bool by_group) {
  std::vector<FusionGroup> groups;
  size_t group_bytes = 0;
  for (size_t i = 0; i < ready.size(); ++i) {
    const Request& r = *ready[i];
    const size_t bytes = static_cast<size_t>(r.count) * DataTypeSize(r.dtype);
    // Fusable is an equivalence among host allreduces: matching the last
    // of the group matches them all.
    const bool joins = !groups.empty() && Fusable(*ready[i - 1], r, by_group) &&
                       group_bytes + bytes <= threshold_bytes;
    if (joins) {
      groups.back().end = i + 1;
      group_bytes += bytes;
    } else {
      groups.push_back({i, i + 1});
      group_bytes = bytes;
    }
  }
  return groups;
}

}  // namespace hvd::runtime
