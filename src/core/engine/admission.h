// Admission of a Pod's resources, before any quota or placement: Kubernetes' LimitRanger
// (defaults, then checks) and the ResourceQuota container constraints ("must specify").
//
// Pure functions over plain values; the engine calls them once per submitted pod. Messages follow
// Kubernetes' wording, prefixed with the object that produced them (results say why).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/objects.h"

namespace arbiter::engine {

// A field of a pod that kube-apiserver's validation refuses: its path, and the message without it
// ("Invalid value: ...").
struct FieldError {
  std::string field, message;
};

// A pod's containers as admission leaves them: API defaulting (a limit without a request
// requests its limit) and every LimitRange default applied. `requests` / `limits` are the
// Kubernetes pod totals: per resource max(sum over containers, max over init containers).
struct AdmittedPod {
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  ResourceList requests;
  ResourceList limits;
  // The requests above their limits once defaulted (a LimitRange's default limit below an
  // explicit request): what ApplyLimitRanges' "is invalid" refusal is made of, field by field.
  std::vector<FieldError> invalid;
};

// Kubernetes LimitRanger over the namespace's LimitRanges, `ranges` in the order they apply
// (the engine passes them sorted by name; Kubernetes leaves the order to its informer cache).
//
// Mutating phase: for each LimitRange in turn, its Container defaults are merged into every
// container and init container that does not set that field yet — so an earlier LimitRange wins
// for a field already set. Within one LimitRange a later Container item overrides an earlier one
// (as defaultContainerResourceRequirements builds one map). Object defaults apply per item first:
// default <- max, defaultRequest <- default <- min.
//
// Then the API server's validation of the defaulted pod: a container request above its limit is
// refused as `Pod "NAME" is invalid: spec.containers[0].resources.requests[cpu]: Invalid value:
// "2": must be less than or equal to cpu limit of 1` (several in brackets).
//
// Validating phase, after all defaults: each LimitRange checks Container items (min, max,
// maxLimitRequestRatio per container and init container) and Pod items (the same on the pod
// totals). Kubernetes stops at the first LimitRange that fails and reports all of its violations:
// one as `LimitRange ns/name: <violation>`, several as `LimitRange ns/name: [<v1>, <v2>]`.
//
// Returns "" when the pod is admitted (and fills `out`), else the message.
std::string ApplyLimitRanges(const Pod& pod, const std::vector<const LimitRange*>& ranges,
                             AdmittedPod* out);

// Kubernetes' podEvaluator.Constraints: a ResourceQuota whose hard list names cpu or memory
// (`cpu`, `requests.cpu`, `limits.cpu`, and the memory ones) requires each container and init
// container to set that request or limit itself. Returns, for the first such quota in `quotas`
// (already filtered by scope) that a container misses, the Kubernetes message:
//   failed quota: NAME: must specify limits.cpu for: app,sidecar; requests.memory for: app
// (resources sorted, container names sorted and de-duplicated).
std::optional<std::string> QuotaContainerConstraints(const ResourceQuota& quota,
                                                     const AdmittedPod& pod);

}  // namespace arbiter::engine
