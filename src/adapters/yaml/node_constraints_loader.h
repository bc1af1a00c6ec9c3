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
// spec.affinity: nodeAffinity, podAffinity and podAntiAffinity (pod_topology_loader.h).
void ReadAffinity(DocReader& r, const YAML::Node& n, const std::string& path, Pod* pod);

}  // namespace arbiter::yaml
