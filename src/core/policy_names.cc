#include "core/policy_names.h"

#include <cctype>

namespace arbiter {

const std::vector<PolicyName<PlacementPolicyName>>& PlacementPolicyNames() {
  static const std::vector<PolicyName<PlacementPolicyName>> t = {
      {PlacementPolicyName::kBestFit, "BestFit", "bestfit", {}},
      {PlacementPolicyName::kLeastAllocated, "LeastAllocated", "leastallocated", {"spread"}},
      {PlacementPolicyName::kFGD, "FGD", "fgd", {}},
      {PlacementPolicyName::kPacking, "Packing", "packing", {"gpupacking"}},
      {PlacementPolicyName::kDotProduct, "DotProduct", "dotproduct", {"dotprod"}},
      {PlacementPolicyName::kRandom, "Random", "random", {"randomfit"}},
  };
  return t;
}

const std::vector<PolicyName<PreemptionType>>& PreemptionTypeNames() {
  static const std::vector<PolicyName<PreemptionType>> t = {
      {PreemptionType::kPriority, "Priority", "priority", {}},
      {PreemptionType::kQoS, "QoS", "qos", {}},
  };
  return t;
}

const std::vector<PolicyName<PreemptMode>>& PreemptModeNames() {
  static const std::vector<PolicyName<PreemptMode>> t = {
      {PreemptMode::kRequeue, "Requeue", "requeue", {}},
      {PreemptMode::kCancel, "Cancel", "cancel", {}},
  };
  return t;
}

const std::vector<PolicyName<QuotaExceededAction>>& QuotaExceededActionNames() {
  static const std::vector<PolicyName<QuotaExceededAction>> t = {
      {QuotaExceededAction::kQueue, "Queue", "queue", {}},
      {QuotaExceededAction::kReject, "Reject", "reject", {}},
  };
  return t;
}

const std::vector<PolicyName<DisruptionBudgetMode>>& DisruptionBudgetModeNames() {
  static const std::vector<PolicyName<DisruptionBudgetMode>> t = {
      {DisruptionBudgetMode::kStrict, "Strict", "strict", {}},
      {DisruptionBudgetMode::kBestEffort, "BestEffort", "besteffort", {}},
  };
  return t;
}

const std::vector<PolicyName<ReclaimMode>>& ReclaimModeNames() {
  static const std::vector<PolicyName<ReclaimMode>> t = {
      {ReclaimMode::kAny, "Any", "any", {}},
      {ReclaimMode::kLowerPriority, "LowerPriority", "lowerpriority", {}},
      {ReclaimMode::kNever, "Never", "never", {}},
  };
  return t;
}

const std::vector<PolicyName<VictimOrder>>& VictimOrderNames() {
  static const std::vector<PolicyName<VictimOrder>> t = {
      {VictimOrder::kDefault, "OldestFirst", "oldestfirst", {}},
      {VictimOrder::kYoungestFirst, "YoungestFirst", "youngestfirst", {}},
      {VictimOrder::kLeastLostWork, "LeastLostWork", "leastlostwork", {}},
  };
  return t;
}

const char* VictimOrderInUse(const PoolPolicy& p) {
  if (p.victim_order == VictimOrder::kDefault)
    return p.preemption_type == PreemptionType::kQoS ? "OldestFirst" : "Kubernetes";
  return ToString(p.victim_order);
}

const std::vector<PolicyName<WithinNamespacePolicy>>& WithinNamespacePolicyNames() {
  static const std::vector<PolicyName<WithinNamespacePolicy>> t = {
      {WithinNamespacePolicy::kNever, "Never", "never", {}},
      {WithinNamespacePolicy::kLowerPriority, "LowerPriority", "lowerpriority", {}},
      {WithinNamespacePolicy::kLowerOrNewerEqualPriority,
       "LowerOrNewerEqualPriority",
       "lowerornewerequalpriority",
       {}},
  };
  return t;
}

const std::vector<PolicyName<BorrowWithinCohortPolicy>>& BorrowWithinCohortPolicyNames() {
  static const std::vector<PolicyName<BorrowWithinCohortPolicy>> t = {
      {BorrowWithinCohortPolicy::kNever, "Never", "never", {}},
      {BorrowWithinCohortPolicy::kLowerPriority, "LowerPriority", "lowerpriority", {}},
  };
  return t;
}

const std::vector<PolicyName<FairShareStrategy>>& FairShareStrategyNames() {
  static const std::vector<PolicyName<FairShareStrategy>> t = {
      {FairShareStrategy::kLessThanOrEqualToFinalShare,
       "LessThanOrEqualToFinalShare",
       "lessthanorequaltofinalshare",
       {}},
      {FairShareStrategy::kLessThanInitialShare,
       "LessThanInitialShare",
       "lessthaninitialshare",
       {}},
  };
  return t;
}

std::string NormalizePolicyText(std::string_view text) {
  std::string k;
  for (char c : text)
    if (c != '-' && c != '_' && c != ' ')
      k.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return k;
}

Result<PlacementPolicyName> ParsePlacementPolicy(std::string_view text) {
  const std::string k = NormalizePolicyText(text);
  std::string keys;
  const auto& table = PlacementPolicyNames();
  for (size_t i = 0; i < table.size(); ++i) {
    const auto& e = table[i];
    if (k == e.key || k == NormalizePolicyText(e.manifest)) return e.value;
    for (const char* a : e.aliases)
      if (k == a) return e.value;
    keys += (i == 0 ? "" : i + 1 == table.size() ? " or " : ", ") + std::string(e.key);
  }
  return Result<PlacementPolicyName>::Error("unknown placement policy '" + std::string(text) +
                                            "' (expected " + keys + ")");
}

std::string PlacementPolicyKey(PlacementPolicyName p) {
  for (const auto& e : PlacementPolicyNames())
    if (e.value == p) return e.key;
  return "unknown";
}

}  // namespace arbiter
