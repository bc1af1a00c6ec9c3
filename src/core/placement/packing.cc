// GPU Packing (see policies.h). Tier scores are spaced so that a lower tier never beats a higher
// one: tier 1 in [3'000'000, 3'001'000], tier 2 in [2'000'000, 2'000'999], tier 3 in
// [1'000'000, 1'000'999]; pods without GPUs score 0.
#include "core/placement/policies.h"

namespace arbiter::placement {

Candidate PackingPolicy::Score(const NodeState& node, const PodShape& pod) {
  GpuAssignment a = node.DefaultGpuChoice(pod);
  if (pod.gpu_count == 0) return Candidate{0, std::move(a)};
  const int devices = node.gpu_devices();
  const int full_free = node.full_free_gpus();
  if (full_free == devices)  // tier 3: untouched node; fewer GPUs first
    return Candidate{1000000 + 999 - devices, std::move(a)};
  int fully_free_used = 0;
  int64_t free_on_used = 0;
  for (int16_t d : a.devices) {
    const int32_t free = kMilliPerGpu - node.gpu_used_milli[d];
    if (free == kMilliPerGpu) ++fully_free_used;
    free_on_used += free;
  }
  if (fully_free_used > 0)  // tier 2: opens fresh GPUs on a used node; fewer first
    return Candidate{2000000 + 999 - fully_free_used, std::move(a)};
  // tier 1: only partly used GPUs; the fuller the device, the better
  return Candidate{3000000 + 1000 - free_on_used / static_cast<int64_t>(a.devices.size()),
                   std::move(a)};
}

int64_t PackingPolicy::ScoreOnly(const NodeState& node, const PodShape& pod) {
  if (pod.gpu_count == 0) return 0;
  const int devices = node.gpu_devices();
  if (node.full_free_gpus() == devices) return 1000000 + 999 - devices;
  if (pod.gpu_milli_per_device >= kMilliPerGpu) return 2000000 + 999 - pod.gpu_count;
  // Shared: the fullest device that fits (DefaultGpuChoice).
  int32_t best = kMilliPerGpu + 1;
  for (int32_t u : node.gpu_used_milli) {
    const int32_t free = kMilliPerGpu - u;
    if (free >= pod.gpu_milli_per_device && free < best) best = free;
  }
  if (best == kMilliPerGpu) return 2000000 + 999 - 1;
  return 3000000 + 1000 - best;
}

}  // namespace arbiter::placement
