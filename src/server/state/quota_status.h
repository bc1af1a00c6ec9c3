// ResourceQuota `status` (hard, used) as the quota controller keeps it, from the engine's answer
// (engine::Engine::resource_quota_usages): usage as the engine's QuotaBook charges it, every scope
// applied (PriorityClass, BestEffort / NotBestEffort, Terminating / NotTerminating). Arbiter
// admits against quota at scheduling time, so queued pods are not charged. This only formats the
// engine's numbers as Kubernetes quantities. Pure.
#pragma once

#include <nlohmann/json.hpp>

#include "core/engine/types.h"

namespace arbiter::server {

nlohmann::json QuotaStatus(const engine::ResourceQuotaUsage& usage);

}  // namespace arbiter::server
