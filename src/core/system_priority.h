// Kubernetes' built-in PriorityClasses (scheduling.k8s.io SystemPriorityClasses), which every
// cluster has: a pod may name them without a PriorityClass object here. Both preempt lower
// priorities. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace arbiter {

// system-cluster-critical 2000000000, system-node-critical 2000001000; nullopt for other names.
inline std::optional<int32_t> SystemPriorityClassValue(std::string_view name) {
  if (name == "system-cluster-critical") return 2000000000;
  if (name == "system-node-critical") return 2000001000;
  return std::nullopt;
}

}  // namespace arbiter
