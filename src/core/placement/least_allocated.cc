// LeastAllocated (spread): prefer the node left emptiest after placement (the mirror of BestFit).
#include "core/placement/policies.h"

namespace arbiter::placement {

Candidate LeastAllocatedPolicy::Score(const NodeState& node, const PodShape& pod) {
  return Candidate{FreeSharePpm(node, pod), node.DefaultGpuChoice(pod)};
}

}  // namespace arbiter::placement
