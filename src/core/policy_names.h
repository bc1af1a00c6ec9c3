// The names of Arbiter's policy choices, in one table shared by the manifest loader, the CLI and
// the reports: the manifest spelling (PascalCase, exact, as in docs/manifests.md), the CLI key
// (lower case; `--policy`, `sim compare --policies`, trace reports) and aliases the CLI also takes.
// The CLI matches case-insensitively and ignores '-', '_' and spaces: `least-allocated`,
// `LeastAllocated` and `leastallocated` are one policy, for `-f` and for trace replay alike.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/objects.h"
#include "core/status.h"

namespace arbiter {

template <typename E>
struct PolicyName {
  E value;
  const char* manifest;              // spelling in manifests and reports
  const char* key;                   // canonical CLI spelling
  std::vector<const char*> aliases;  // other CLI spellings
};

const std::vector<PolicyName<PlacementPolicyName>>& PlacementPolicyNames();
const std::vector<PolicyName<PreemptionType>>& PreemptionTypeNames();
const std::vector<PolicyName<PreemptMode>>& PreemptModeNames();
const std::vector<PolicyName<QuotaExceededAction>>& QuotaExceededActionNames();
const std::vector<PolicyName<DisruptionBudgetMode>>& DisruptionBudgetModeNames();
const std::vector<PolicyName<ReclaimMode>>& ReclaimModeNames();
// preemption.victimOrder: kDefault is spelt OldestFirst (Slurm's default under type QoS).
const std::vector<PolicyName<VictimOrder>>& VictimOrderNames();
// The victim order a policy uses, as the report names it: "Kubernetes" (type Priority, the
// default: priority, then the latest start), "OldestFirst" (type QoS, the default: Slurm's),
// "YoungestFirst" or "LeastLostWork".
const char* VictimOrderInUse(const PoolPolicy& p);
const std::vector<PolicyName<WithinNamespacePolicy>>& WithinNamespacePolicyNames();
const std::vector<PolicyName<BorrowWithinCohortPolicy>>& BorrowWithinCohortPolicyNames();
const std::vector<PolicyName<FairShareStrategy>>& FairShareStrategyNames();

// The manifest spellings in enum order (what the loader accepts, exactly).
template <typename E>
std::vector<std::string> ManifestNames(const std::vector<PolicyName<E>>& table) {
  std::vector<std::string> out;
  for (const auto& e : table) out.emplace_back(e.manifest);
  return out;
}

// "least-allocated" -> "leastallocated": lower case without '-', '_' and spaces.
std::string NormalizePolicyText(std::string_view text);

// A CLI spelling of a placement policy (manifest names, keys and aliases, as above). The error
// lists the keys: "unknown placement policy 'x' (expected bestfit, fgd, ...)".
Result<PlacementPolicyName> ParsePlacementPolicy(std::string_view text);
// The canonical CLI key: "bestfit", "leastallocated", "fgd", "packing", "dotproduct", "random".
std::string PlacementPolicyKey(PlacementPolicyName p);

}  // namespace arbiter
