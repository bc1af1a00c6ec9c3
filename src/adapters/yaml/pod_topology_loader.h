// Reading and validating pod topology from manifests: spec.affinity.podAffinity and
// podAntiAffinity, spec.topologySpreadConstraints, with Kubernetes' validation rules and messages
// (pkg/apis/core/validation: validatePodAffinityTerm, validateWeightedPodAffinityTerms,
// validateTopologySpreadConstraints; apimachinery's ValidateLabelSelector), e.g. "Required
// value: can not be empty" for a missing topologyKey. Internal to the YAML adapter.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "adapters/yaml/yaml_reader.h"
#include "core/objects.h"

namespace arbiter::yaml {

// spec.affinity.podAffinity or spec.affinity.podAntiAffinity.
void ReadPodAffinity(DocReader& r, const YAML::Node& n, const std::string& path, PodAffinity* out);
// spec.topologySpreadConstraints. nodeAffinityPolicy and nodeTaintsPolicy other than their
// defaults (Honor, Ignore) are warned about: not modelled. `match_label_keys` gets each
// constraint's matchLabelKeys by its index in `out`, for ApplyMatchLabelKeys once the pod's
// labels are known.
void ReadTopologySpread(DocReader& r, const YAML::Node& n, const std::string& path,
                        std::vector<TopologySpreadConstraint>* out,
                        std::map<size_t, std::vector<std::string>>* match_label_keys);
// matchLabelKeys as the API server applies them (Kubernetes 1.34,
// MatchLabelKeysInPodTopologySpread): for each key the pod has a label for, `key In (its value)`
// joins the constraint's selector; keys it has no label for are ignored.
void ApplyMatchLabelKeys(const std::map<size_t, std::vector<std::string>>& keys, Pod* pod);

}  // namespace arbiter::yaml
