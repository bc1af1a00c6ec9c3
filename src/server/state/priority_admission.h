// Kubernetes' Priority admission on a pod's create (plugin/pkg/admission/priority): the priority
// comes from spec.priorityClassName, or the global default class (the lowest if several), or is
// 0; a spec.priority that differs is refused (403), so a tenant cannot put its pods above the
// others'. The built-in system-* classes resolve without an object (core/system_priority.h). An
// unknown class is the validator's (422): admitted here. One rule for the API's creates
// (http_api.cc) and the Job controller's (Cluster::CreateJobPods: a FailedCreate).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace arbiter::server {

// The refusal's text when `pod` sets a spec.priority other than the one admission computes from
// `classes` (the stored PriorityClasses); nullopt when it is admitted.
std::optional<std::string> PriorityAdmissionRefusal(
    const nlohmann::json& pod, const std::vector<std::shared_ptr<const nlohmann::json>>& classes);

}  // namespace arbiter::server
