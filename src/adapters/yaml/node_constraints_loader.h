// Reading and validating node constraints from manifests: Node spec.taints, Pod spec.tolerations
// and spec.affinity.nodeAffinity, with Kubernetes' validation rules and messages
// (pkg/apis/core/validation: validateNodeTaints, ValidateTolerations, ValidateNodeSelector,
// ValidatePreferredSchedulingTerms), e.g. "Required value: must be specified when `operator` is
// 'In' or 'NotIn'". Internal to the YAML adapter.
#pragma once

#include <string>
#include <vector>

#include "adapters/yaml/yaml_reader.h"
#include "core/objects.h"

namespace arbiter::yaml {

void ReadTaints(DocReader& r, const YAML::Node& n, const std::string& path,
                std::vector<Taint>* out);
void ReadTolerations(DocReader& r, const YAML::Node& n, const std::string& path,
                     std::vector<Toleration>* out);
// spec.affinity: nodeAffinity is read; podAffinity and podAntiAffinity are ignored with a
// warning (not modelled).
void ReadAffinity(DocReader& r, const YAML::Node& n, const std::string& path, NodeAffinity* out);

}  // namespace arbiter::yaml
