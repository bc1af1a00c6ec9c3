// The concrete placement policies (see policy.h). One .cc file each.
#pragma once

#include "core/placement/policy.h"

namespace arbiter::placement {

// Share of cpu, memory and GPU that stays free after placing `pod`, summed, in ppm.
int64_t FreeSharePpm(const NodeState& node, const PodShape& pod);

class BestFitPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "BestFit"; }
  Candidate Score(const NodeState& node, const PodShape& pod) override;
};

class LeastAllocatedPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "LeastAllocated"; }
  Candidate Score(const NodeState& node, const PodShape& pod) override;
};

}  // namespace arbiter::placement
