// BestFit: prefer the node left fullest after placement. Score = -(sum over cpu, memory and GPU
// of the share of the node's capacity that stays free), in parts per million; a node without GPUs
// counts its GPU share as fully free only for GPU pods, so CPU pods prefer CPU nodes... and GPU
// nodes stay free for GPU pods. Shared-GPU pods go to the fullest device that fits.
#include "core/placement/policies.h"

namespace arbiter::placement {

int64_t FreeSharePpm(const NodeState& n, const PodShape& p) {
  constexpr int64_t kPpm = 1000000;
  int64_t s = 0;
  if (n.cpu_capacity_milli > 0)
    s += (n.cpu_free() - p.cpu_milli) * kPpm / n.cpu_capacity_milli;
  if (n.mem_capacity_bytes > 0)
    s += static_cast<int64_t>(static_cast<__int128>(n.mem_free() - p.mem_bytes) * kPpm /
                              n.mem_capacity_bytes);
  if (n.gpu_devices() > 0)
    s += (n.gpu_free_milli() - p.gpu_milli_total()) * kPpm / (int64_t{n.gpu_devices()} * kMilliPerGpu);
  return s;
}

Candidate BestFitPolicy::Score(const NodeState& node, const PodShape& pod) {
  return Candidate{-FreeSharePpm(node, pod), node.DefaultGpuChoice(pod)};
}

}  // namespace arbiter::placement
