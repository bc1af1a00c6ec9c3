// Which changes of a pod's spec an update may make, as Kubernetes' ValidatePodUpdate allows them:
// container and init container images; activeDeadlineSeconds set, or lowered (never raised or
// removed); tolerations added (existing ones kept, their tolerationSeconds may change);
// terminationGracePeriodSeconds set to 1 when it was negative; scheduling gates removed. Anything
// else is refused with Kubernetes' message ("spec: Forbidden: pod updates may not change fields
// other than ..."), followed by the paths that changed. Metadata (labels, annotations) is always
// mutable and not looked at here. Pure.
//
// What the engine sees: a pod's scheduling inputs are read once, at submission; images,
// tolerations added by an update (the engine keeps those of the submission: a pending pod does
// not gain them, a running one is not spared a NoExecute eviction by them) and scheduling gates
// (ignored, with a warning, at submission) change nothing there. An activeDeadlineSeconds set or
// lowered becomes the engine's SetPodDeadline: backfill plans with the new limit (docs/serve.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace arbiter::server {

struct PodUpdateError {
  std::string field;    // "spec", "spec.activeDeadlineSeconds", "spec.tolerations"
  std::string message;  // "Forbidden: pod updates may not change fields other than ..."
};

// `old_spec`, `new_spec`: the stored and the submitted pod spec, without spec.nodeName (the
// server's). Empty: the update is allowed.
std::vector<PodUpdateError> ValidatePodSpecUpdate(const nlohmann::json& old_spec,
                                                  const nlohmann::json& new_spec);

}  // namespace arbiter::server
