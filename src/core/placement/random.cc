// Random (see policies.h). Each Score() draws the next value of the seeded stream, so the argmax
// over the feasible nodes is a uniformly random node; ties (probability 2^-62) go to the lowest
// index as usual.
#include "core/placement/policies.h"

namespace arbiter::placement {

Candidate RandomPolicy::Score(const NodeState& node, const PodShape& pod) {
  const int64_t score = static_cast<int64_t>(rng_.Next() >> 2);
  if (pod.gpu_count != 1 || pod.gpu_milli_per_device >= kMilliPerGpu)
    return Candidate{score, node.DefaultGpuChoice(pod)};
  // Shared GPU: uniform among the devices that fit (reservoir sampling in index order).
  GpuAssignment a;
  a.milli_per_device = pod.gpu_milli_per_device;
  int16_t chosen = -1;
  uint64_t seen = 0;
  for (int i = 0; i < node.gpu_devices(); ++i) {
    if (kMilliPerGpu - node.gpu_used_milli[i] < pod.gpu_milli_per_device) continue;
    ++seen;
    if (rng_.Below(seen) == 0) chosen = static_cast<int16_t>(i);
  }
  if (chosen >= 0) a.devices.push_back(chosen);
  return Candidate{score, std::move(a)};
}

std::optional<Choice> RandomPolicy::Choose(const std::vector<NodeState>& all,
                                           const std::vector<size_t>& feasible,
                                           const PodShape& pod) {
  if (rescore_winner_) return PlacementPolicy::Choose(all, feasible, pod);
  std::optional<Choice> best;
  for (size_t i : feasible) {
    Candidate c = Score(all[i], pod);
    if (!best || c.score > best->candidate.score ||
        (c.score == best->candidate.score && i < best->node_index))
      best = Choice{i, std::move(c)};
  }
  return best;
}

}  // namespace arbiter::placement
