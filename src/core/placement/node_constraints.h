// Node constraints as kube-scheduler's plugins define them: TaintToleration (filter and score),
// NodeUnschedulable (a cordoned node admits pods that tolerate its built-in taint) and
// NodeAffinity (nodeSelector and required terms as a filter, preferred terms as a score), and
// the normalisation kube-scheduler applies to every score plugin (DefaultNormalizeScore).
//
// The rules (k8s.io/api core/v1 Toleration.ToleratesTaint, component-helpers nodeaffinity):
//   - a toleration tolerates a taint when its effect is empty or equal, its key is empty or
//     equal, and with Equal its value equals the taint's (Exists: any value). An empty key with
//     Exists tolerates every taint.
//   - the filter looks at NoSchedule and NoExecute taints; PreferNoSchedule taints only score
//     (fewer untolerated ones is better).
//   - nodeSelector (every pair) and the required terms (any term; within a term every
//     requirement) must both hold. NotIn and DoesNotExist match a node without the label;
//     Gt / Lt compare integers and need the label to be an integer.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/objects.h"

namespace arbiter::placement {

// The taint the node lifecycle controller puts on a cordoned node (spec.unschedulable).
inline constexpr const char* kUnschedulableTaintKey = "node.kubernetes.io/unschedulable";
// The only field matchFields may select.
inline constexpr const char* kNodeNameField = "metadata.name";

const char* ToString(TaintEffect e);           // "NoSchedule", "PreferNoSchedule", "NoExecute"
const char* ToString(TolerationOperator o);    // "Equal", "Exists"
const char* ToString(NodeSelectorOperator o);  // "In", ..., "Gt", "Lt"

bool ToleratesTaint(const Toleration& t, const Taint& taint);
bool TolerationsTolerate(const std::vector<Toleration>& tolerations, const Taint& taint);
// The first NoSchedule or NoExecute taint the tolerations do not tolerate (the TaintToleration
// filter), or null.
const Taint* FirstUntoleratedTaint(const std::vector<Taint>& taints,
                                   const std::vector<Toleration>& tolerations);
// The NodeUnschedulable filter's exception: the pod tolerates the unschedulable taint.
bool ToleratesUnschedulable(const std::vector<Toleration>& tolerations);
// The TaintToleration score (before normalisation): PreferNoSchedule taints not tolerated by the
// tolerations whose effect is PreferNoSchedule or empty.
int64_t CountIntolerablePreferNoSchedule(const std::vector<Taint>& taints,
                                         const std::vector<Toleration>& tolerations);
bool HasHardTaint(const std::vector<Taint>& taints);    // NoSchedule or NoExecute
bool HasPreferTaint(const std::vector<Taint>& taints);  // PreferNoSchedule
// "{key: value}", as kube-scheduler names an untolerated taint.
std::string TaintText(const Taint& taint);

bool RequirementMatches(const NodeSelectorRequirement& r,
                        const std::map<std::string, std::string>& labels);
bool TermMatches(const NodeSelectorTerm& t, const std::map<std::string, std::string>& labels,
                 const std::string& node_name);
// The NodeAffinity filter: nodeSelector and the required terms.
bool RequiredAffinityMatches(const std::map<std::string, std::string>& node_selector,
                             const NodeAffinity& affinity,
                             const std::map<std::string, std::string>& labels,
                             const std::string& node_name);
// The NodeAffinity score (before normalisation): the sum of the matching preferred terms'
// weights.
int64_t PreferredAffinityScore(const NodeAffinity& affinity,
                               const std::map<std::string, std::string>& labels,
                               const std::string& node_name);

// kube-scheduler's framework.MaxNodeScore and the default profile's plugin weights; the placement
// policy takes NodeResourcesFit's place (weight 1).
inline constexpr int64_t kMaxNodeScore = 100;
inline constexpr int64_t kTaintTolerationWeight = 3;
inline constexpr int64_t kNodeAffinityWeight = 2;
inline constexpr int64_t kPlacementPolicyWeight = 1;
// DefaultNormalizeScore: scores scaled to 0..kMaxNodeScore by the largest (integer division);
// `reverse` turns them around (fewer is better). All zero: 0 each, kMaxNodeScore with reverse.
void NormalizeScores(std::vector<int64_t>& scores, bool reverse);

}  // namespace arbiter::placement
