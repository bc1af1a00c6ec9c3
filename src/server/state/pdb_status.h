// PodDisruptionBudget `status` as Kubernetes' disruption controller writes it, computed from the
// stored pods at once (the daemon is one process: there is no controller lag, so no
// status.disruptedPods and observedGeneration is always the PDB's generation). Pure.
//
// Counting, as the engine counts when it preempts (core/engine/pdb.cc): the pods of the PDB's
// namespace its selector matches, finished ones (Succeeded, Failed) left out, are expectedPods;
// those Ready and not being deleted are currentHealthy; desiredHealthy is minAvailable (a
// percentage of expectedPods rounded up) or expectedPods - maxUnavailable (rounded up), at least
// 0; disruptionsAllowed = currentHealthy - desiredHealthy, at least 0 (0 when no pod is
// expected). Condition DisruptionAllowed: True / SufficientPods when disruptions are allowed,
// else False / InsufficientPods. Kubernetes scales percentages by the pods' controllers; Arbiter's
// pods have none, so the selected pods are the scale.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "core/duration.h"
#include "core/objects.h"

namespace arbiter::server {

using Json = nlohmann::json;

// The pod's Ready condition is True and it has no deletionTimestamp.
bool PodHealthy(const Json& pod);
// Phase Succeeded or Failed.
bool PodFinished(const Json& pod);
// The PDB's selector matches the pod's labels (same namespace is the caller's business).
bool PdbSelects(const PodDisruptionBudget& pdb, const Json& pod);

// What a pod counts in a budget's status: expected (selected and not finished) and healthy (of
// those, Ready and not being deleted), 0 or 1 each.
struct PdbCount {
  int64_t expected = 0, healthy = 0;
};
PdbCount PdbCountOf(const PodDisruptionBudget& pdb, const Json& pod);

// The new status of `pdb_object` (whose old status keeps the condition's transition time) given
// the counts of the pods of its namespace.
Json PdbStatus(const PodDisruptionBudget& pdb, const Json& pdb_object, PdbCount pods, Millis now);

}  // namespace arbiter::server
