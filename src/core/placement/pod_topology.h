// Pod topology rules as kube-scheduler's InterPodAffinity and PodTopologySpread plugins define
// them: which pods a term or a constraint selects, and the scores' normalisation. The engine
// counts the selected pods per topology domain (engine/pod_topology.cc); these are the rules.
//
//   - a PodAffinityTerm selects a pod when the pod's namespace is one of the term's namespaces
//     (none named and no namespaceSelector: the namespace of the pod that owns the term; an empty
//     namespaceSelector: every namespace; namespaces and namespaceSelector are ORed) and its
//     labelSelector matches the pod's labels (an absent labelSelector matches no pod).
//   - a topology spread constraint selects pods of the owner's namespace whose labels its
//     labelSelector matches (absent: none).
//   - a domain is a value of the term's topologyKey among the nodes' labels; a node without the
//     key is in no domain.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/objects.h"

namespace arbiter::placement {

// The label every node carries (its name): topologyKey for "one replica per node".
inline constexpr const char* kHostnameLabel = "kubernetes.io/hostname";

using Labels = std::map<std::string, std::string>;

// `ns_labels`: the labels of the pod's namespace (null: none known), for namespaceSelector.
bool TermSelects(const PodAffinityTerm& t, const std::string& owner_ns, const std::string& pod_ns,
                 const Labels& pod_labels, const Labels* ns_labels);
bool SpreadSelects(const TopologySpreadConstraint& c, const std::string& owner_ns,
                   const std::string& pod_ns, const Labels& pod_labels);

// PodTopologySpread's score for one soft constraint on a node whose domain holds `count`
// selected pods: count x the weight of the constraint's topology (ln(domains + 2), kept in
// thousandths here) + maxSkew - 1, in thousandths (kube-scheduler: scoreForCount, in float64).
int64_t SpreadWeightMilli(size_t domains);
int64_t SpreadScoreMilli(int64_t count, int32_t max_skew, int64_t weight_milli);
// PodTopologySpread's NormalizeScore: fewer is better, relative to the largest, with nodes
// `ignored` (missing a constraint's key) at 0. Scores in thousandths are rounded to units first.
void NormalizeSpreadScores(std::vector<int64_t>& scores, const std::vector<char>& ignored);
// InterPodAffinity's NormalizeScore: min to 0, max to kMaxNodeScore (all equal: 0).
void NormalizeAffinityScores(std::vector<int64_t>& scores);

// kube-scheduler's default profile weights for the two plugins.
inline constexpr int64_t kInterPodAffinityWeight = 2;
inline constexpr int64_t kPodTopologySpreadWeight = 2;
// InterPodAffinity's hardPodAffinityWeight (its default): what a placed pod's required affinity
// term that selects the incoming pod adds to the score of its domain (symmetry).
inline constexpr int64_t kHardPodAffinityWeight = 1;

}  // namespace arbiter::placement
