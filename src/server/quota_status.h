// ResourceQuota `status` (hard, used) as the quota controller keeps it, from the engine's view:
// usage counts the namespace's workloads that hold resources (running or terminating; Arbiter
// admits against quota at scheduling time, so queued pods are not charged), charged as the
// engine's QuotaBook charges them (requests.X / bare X: requests; limits.X: limits, GPUs and
// other extended resources at their request; pods / count/pods: 1), only workloads the quota's
// PriorityClass scope selects. Pure.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "core/engine/types.h"
#include "core/objects.h"

namespace arbiter::server {

nlohmann::json QuotaStatus(const ResourceQuota& q,
                           const std::vector<engine::WorkloadStatus>& holding);

}  // namespace arbiter::server
