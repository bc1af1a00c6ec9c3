// What kube-apiserver writes into a pod's resources before it stores it, for `arbiter serve`
// (journal format 6 on: Cluster::SetFormat5Rules off). The engine charged these defaults before
// (engine::ApplyLimitRanges); since format 6 the stored object shows them too, as in Kubernetes,
// so `kubectl get pod -o yaml`, the QoS class and a client reading the pod see what is charged.
//
// - SetDefaults_Pod, at a create and an update: a container or init container that limits a
//   resource and does not request it requests its limit (the limit's value as sent).
// - LimitRanger, at a create: each of the namespace's LimitRanges in name order sets its Container
//   items' default limits and default requests (default <- max, defaultRequest <- default <- min,
//   as kube stores a LimitRange; engine::ApplyLimitRanges charges the same) in every container and
//   init container that does not set that resource yet, and writes annotation
//   `kubernetes.io/limit-ranger`.
//
// The annotation is kube's: "LimitRanger plugin set: cpu, memory request for container app; cpu
// limit for container app; cpu request for init container setup" (resources sorted; each
// LimitRange that sets anything writes it whole, so the last one's list is kept). Values are the
// LimitRange's text ("512M" stays "512M"; kube writes its canonical form, the same unless the
// LimitRange was written otherwise, "0.5" for "500m"). Pure: no I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

namespace arbiter::server {

// SetDefaults_Pod's requests from limits. Returns whether `pod` changed.
bool DefaultRequestsFromLimits(nlohmann::json& pod);

// LimitRanger's mutation of a pod being created, `ranges` (the namespace's LimitRange objects as
// stored) in name order. Returns whether `pod` changed. A pod whose containers are not an array of
// objects is left as it is (validation refuses it).
bool ApplyLimitRangeDefaults(nlohmann::json& pod, const std::vector<const nlohmann::json*>& ranges);

}  // namespace arbiter::server
