// Reading and validating pod topology from manifests: spec.affinity.podAffinity and
// podAntiAffinity, spec.topologySpreadConstraints, with Kubernetes' validation rules and messages
// (pkg/apis/core/validation: validatePodAffinityTerm, validateWeightedPodAffinityTerms,
// validateTopologySpreadConstraints; apimachinery's ValidateLabelSelector), e.g. "Required
// value: can not be empty" for a missing topologyKey. Internal to the YAML adapter.
#pragma once

#include <string>
#include <vector>

#include "adapters/yaml/yaml_reader.h"
#include "core/objects.h"

namespace arbiter::yaml {

// spec.affinity.podAffinity or spec.affinity.podAntiAffinity.
void ReadPodAffinity(DocReader& r, const YAML::Node& n, const std::string& path, PodAffinity* out);
// spec.topologySpreadConstraints. nodeAffinityPolicy and nodeTaintsPolicy other than their
// defaults (Honor, Ignore) and matchLabelKeys are warned about: not modelled.
void ReadTopologySpread(DocReader& r, const YAML::Node& n, const std::string& path,
                        std::vector<TopologySpreadConstraint>* out);

}  // namespace arbiter::yaml
