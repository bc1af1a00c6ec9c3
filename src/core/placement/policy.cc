#include "core/placement/policy.h"

#include "core/placement/policies.h"

namespace arbiter::placement {

std::unique_ptr<PlacementPolicy> MakePlacementPolicy(PlacementPolicyName name, uint64_t seed,
                                                     const WorkloadProfile& profile,
                                                     bool random_rescore_winner) {
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
      return std::make_unique<RandomPolicy>(seed, random_rescore_winner);
    case PlacementPolicyName::kBestFit:
    default:
      return std::make_unique<BestFitPolicy>();
  }
}

std::optional<Choice> PlacementPolicy::Choose(const std::vector<NodeState>& all,
                                              const std::vector<size_t>& feasible,
                                              const PodShape& pod) {
  if (feasible.empty()) return std::nullopt;
  size_t best = feasible[0];
  int64_t best_score = ScoreOnly(all[best], pod);
  for (size_t k = 1; k < feasible.size(); ++k) {
    const size_t i = feasible[k];
    const int64_t s = ScoreOnly(all[i], pod);
    if (s > best_score || (s == best_score && i < best)) {
      best = i;
      best_score = s;
    }
  }
  return Choice{best, Score(all[best], pod)};
}

}  // namespace arbiter::placement
