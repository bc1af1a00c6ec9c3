// Admission of a Pod's resources, before any quota or placement: Kubernetes' LimitRanger
// (defaults, then checks).
//
// Pure functions over plain values; the engine calls them once per submitted pod. Messages follow
// Kubernetes' wording, prefixed with the object that produced them (results say why).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/objects.h"

namespace arbiter::engine {

// A pod's containers as admission leaves them: API defaulting (a limit without a request
// requests its limit) and every LimitRange default applied. `requests` / `limits` are the
// Kubernetes pod totals: per resource max(sum over containers, max over init containers).
struct AdmittedPod {
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  ResourceList requests;
  ResourceList limits;
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
// Validating phase, after all defaults: each LimitRange checks Container items (min, max,
// maxLimitRequestRatio per container and init container) and Pod items (the same on the pod
// totals). Kubernetes stops at the first LimitRange that fails and reports all of its violations:
// one as `LimitRange ns/name: <violation>`, several as `LimitRange ns/name: [<v1>, <v2>]`.
//
// Returns "" when the pod is admitted (and fills `out`), else the message.
std::string ApplyLimitRanges(const Pod& pod, const std::vector<const LimitRange*>& ranges, AdmittedPod* out);

}  // namespace arbiter::engine
