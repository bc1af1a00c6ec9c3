#include "core/placement/policy.h"

#include "core/placement/policies.h"

namespace arbiter::placement {

std::unique_ptr<PlacementPolicy> MakePlacementPolicy(PlacementPolicyName name, uint64_t seed,
                                                     const WorkloadProfile& profile) {
  switch (name) {
    case PlacementPolicyName::kLeastAllocated:
      return std::make_unique<LeastAllocatedPolicy>();
    case PlacementPolicyName::kFGD:
      return std::make_unique<FgdPolicy>(profile);
    case PlacementPolicyName::kPacking:
      return std::make_unique<PackingPolicy>();
    case PlacementPolicyName::kDotProduct:
      return std::make_unique<DotProductPolicy>();
    case PlacementPolicyName::kRandom:
      return std::make_unique<RandomPolicy>(seed);
    case PlacementPolicyName::kBestFit:
    default:
      return std::make_unique<BestFitPolicy>();
  }
}

std::optional<Choice> ChooseNode(PlacementPolicy& policy, const std::vector<NodeState>& all,
                                 const std::vector<size_t>& feasible, const PodShape& pod) {
  std::optional<Choice> best;
  for (size_t i : feasible) {
    Candidate c = policy.Score(all[i], pod);
    if (!best || c.score > best->candidate.score ||
        (c.score == best->candidate.score && i < best->node_index))
      best = Choice{i, std::move(c)};
  }
  return best;
}

}  // namespace arbiter::placement
