#include "core/objects.h"

#include <algorithm>
#include <map>

#include "core/policy_names.h"

namespace arbiter {

namespace {
ResourceList Effective(const std::vector<Container>& cs, const std::vector<Container>& init,
                       ResourceList Container::*field) {
  ResourceList sum;
  for (const auto& c : cs) sum += c.*field;
  ResourceList init_max;
  for (const auto& c : init) init_max = ResourceList::Max(init_max, c.*field);
  return ResourceList::Max(sum, init_max);
}
}  // namespace

ResourceList Pod::EffectiveRequests() const {
  return Effective(containers, init_containers, &Container::requests);
}
ResourceList Pod::EffectiveLimits() const {
  return Effective(containers, init_containers, &Container::limits);
}

int64_t IntOrPercent::Resolve(int64_t total) const {
  if (!is_percent) return value;
  return (static_cast<int64_t>(value) * total + 99) / 100;
}

bool SelectorOperatorHolds(SelectorOperator op, bool has, bool in) {
  switch (op) {
    case SelectorOperator::kIn:
      return in;
    case SelectorOperator::kNotIn:
      return !in;
    case SelectorOperator::kExists:
      return has;
    case SelectorOperator::kDoesNotExist:
      return !has;
  }
  return false;
}

bool QoS::AllowsNamespace(const std::string& ns) const {
  return !namespaces || std::find(namespaces->begin(), namespaces->end(), ns) != namespaces->end();
}

bool LabelSelector::Matches(const std::map<std::string, std::string>& labels) const {
  for (const auto& [k, v] : match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const auto& r : match_expressions) {
    auto it = labels.find(r.key);
    bool has = it != labels.end();
    bool in = has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    if (!SelectorOperatorHolds(r.op, has, in)) return false;
  }
  return true;
}

const char* ToString(PreemptionPolicy v) {
  return v == PreemptionPolicy::kNever ? "Never" : "PreemptLowerPriority";
}
namespace {
template <typename E>
const char* ManifestName(const std::vector<PolicyName<E>>& table, E v) {
  for (const auto& e : table)
    if (e.value == v) return e.manifest;
  return "?";
}
}  // namespace

const char* ToString(PreemptMode v) { return ManifestName(PreemptModeNames(), v); }
const char* ToString(QuotaExceededAction v) { return ManifestName(QuotaExceededActionNames(), v); }
const char* ToString(PlacementPolicyName v) { return ManifestName(PlacementPolicyNames(), v); }
const char* ToString(PreemptionType v) { return ManifestName(PreemptionTypeNames(), v); }
const char* ToString(DisruptionBudgetMode v) {
  return ManifestName(DisruptionBudgetModeNames(), v);
}
const char* ToString(ReclaimMode v) { return ManifestName(ReclaimModeNames(), v); }
const char* ToString(VictimOrder v) { return ManifestName(VictimOrderNames(), v); }

// Kueue's wait.Backoff{base, factor 2, cap}.WaitTime(n) (pkg/util/wait/backoff.go): each step
// returns the current duration, then doubles it, clamped to the cap; a cap of 0 is Kueue's
// MaxInt64 / 2 nanoseconds. So the first wait is the base even above the cap. The steps count
// from the first preemption past the immediate requeues.
Millis RequeueBackoffDelay(const PoolPolicy::RequeueBackoff& b, int n) {
  constexpr Millis kNoCap = (INT64_MAX / 2) / 1000000;  // Kueue's cap without one, in ms
  const Millis cap = b.max > 0 ? b.max : kNoCap;
  n -= std::max<int32_t>(b.immediate, 0);
  if (n < 1) return 0;
  Millis d = b.base;
  for (int i = 1; i < n && d != cap; ++i) d = d > cap / 2 ? cap : d * 2;
  return d;
}
const char* ToString(WithinNamespacePolicy v) {
  return ManifestName(WithinNamespacePolicyNames(), v);
}
const char* ToString(BorrowWithinCohortPolicy v) {
  return ManifestName(BorrowWithinCohortPolicyNames(), v);
}
const char* ToString(BillingMode v) {
  switch (v) {
    case BillingMode::kRequest:
      return "Request";
    case BillingMode::kUsage:
      return "Usage";
    case BillingMode::kMax:
      return "Max";
    case BillingMode::kBlended:
      return "Blended";
  }
  return "?";
}
const char* ToString(MigRule v) {
  switch (v) {
    case MigRule::kCompute:
      return "Compute";
    case MigRule::kMemory:
      return "Memory";
    case MigRule::kMax:
      return "Max";
  }
  return "?";
}
const char* ToString(CreditPolicy v) { return v == CreditPolicy::kNone ? "None" : "LostWork"; }
const char* ToString(IdleSharing v) {
  switch (v) {
    case IdleSharing::kNone:
      return "None";
    case IdleSharing::kWeighted:
      return "Weighted";
    case IdleSharing::kEven:
      return "Even";
  }
  return "?";
}
const char* ToString(SelectorOperator v) {
  switch (v) {
    case SelectorOperator::kIn:
      return "In";
    case SelectorOperator::kNotIn:
      return "NotIn";
    case SelectorOperator::kExists:
      return "Exists";
    case SelectorOperator::kDoesNotExist:
      return "DoesNotExist";
  }
  return "?";
}

}  // namespace arbiter

namespace arbiter {

void ResolvePodGroups(ManifestSet* set) {
  std::map<std::pair<std::string, std::string>, const PodGroup*> groups;
  for (const auto& g : set->pod_groups) {
    const std::string ns = g.meta.namespace_.empty() ? "default" : g.meta.namespace_;
    groups.emplace(std::make_pair(ns, g.meta.name), &g);  // the first of a duplicated name
  }
  for (auto& pod : set->pods) {
    pod.pod_group.reset();
    auto label = pod.meta.labels.find(kPodGroupLabel);
    if (label == pod.meta.labels.end()) continue;
    const std::string ns = pod.meta.namespace_.empty() ? "default" : pod.meta.namespace_;
    auto it = groups.find({ns, label->second});
    if (it == groups.end()) continue;
    pod.pod_group = PodGroupRef{label->second, it->second->min_member,
                                it->second->schedule_timeout.value_or(0)};
  }
}

void ResolveFlavors(ManifestSet* set) {
  std::map<std::string, const ResourceFlavor*> by_name;
  for (const auto& f : set->resource_flavors)
    by_name.emplace(f.meta.name, &f);  // the first of a name
  for (auto& q : set->elastic_quotas)
    for (auto& f : q.flavors) {
      auto it = by_name.find(f.name);
      f.node_labels =
          it == by_name.end() ? std::map<std::string, std::string>{} : it->second->node_labels;
    }
}

}  // namespace arbiter
