// BestFit (see policies.h): minimise cpu_free_after/max_cpu + gpu_free_after/max_gpu, as the
// FGD paper's simulator does, in exact integers (both terms scaled by max_cpu x max_gpu).
#include <algorithm>

#include "core/int128.h"
#include "core/placement/policies.h"

namespace arbiter::placement {

int64_t FreeSharePpm(const NodeState& n, const PodShape& p) {
  constexpr int64_t kPpm = 1000000;
  int64_t s = 0;
  if (n.cpu_capacity_milli > 0) s += (n.cpu_free() - p.cpu_milli) * kPpm / n.cpu_capacity_milli;
  if (n.mem_capacity_bytes > 0)
    s += static_cast<int64_t>(static_cast<int128>(n.mem_free() - p.mem_bytes) * kPpm /
                              n.mem_capacity_bytes);
  if (n.gpu_devices() > 0)
    s += (n.gpu_free_milli() - p.gpu_milli_total()) * kPpm /
         (int64_t{n.gpu_devices()} * kMilliPerGpu);
  return s;
}

MaxSpec MaxSpec::Of(const std::vector<NodeState>& nodes) {
  MaxSpec m{0, 0};
  for (const NodeState& n : nodes) {
    m.cpu_milli = std::max(m.cpu_milli, n.cpu_capacity_milli);
    m.gpu_milli = std::max(m.gpu_milli, int64_t{n.gpu_devices()} * kMilliPerGpu);
  }
  if (m.cpu_milli <= 0) m.cpu_milli = 1000;
  if (m.gpu_milli <= 0) m.gpu_milli = kMilliPerGpu;
  return m;
}

Candidate BestFitPolicy::Score(const NodeState& node, const PodShape& pod) {
  return Candidate{ScoreOnly(node, pod), node.DefaultGpuChoice(pod)};
}

}  // namespace arbiter::placement
