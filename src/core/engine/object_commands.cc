#include "core/engine/object_commands.h"

namespace arbiter::engine {

std::vector<CommandOp> PolicyUpsertCommands(const ManifestSet& m) {
  std::vector<CommandOp> out;
  if (m.pool_policy) out.emplace_back(UpsertPoolPolicy{*m.pool_policy});
  for (const auto& pc : m.priority_classes) out.emplace_back(UpsertPriorityClass{pc});
  for (const auto& q : m.qos) out.emplace_back(UpsertQoS{q});
  for (const auto& n : m.namespaces) out.emplace_back(UpsertNamespace{n});
  for (const auto& lr : m.limit_ranges) out.emplace_back(UpsertLimitRange{lr});
  for (const auto& q : m.resource_quotas) out.emplace_back(UpsertResourceQuota{q});
  for (const auto& q : m.elastic_quotas) out.emplace_back(UpsertElasticQuota{q});
  for (const auto& p : m.pdbs) out.emplace_back(UpsertPodDisruptionBudget{p});
  for (const auto& b : m.price_books) out.emplace_back(UpsertPriceBook{b});
  return out;
}

std::optional<CommandOp> DeleteCommand(const std::string& kind, const std::string& ns,
                                       const std::string& name) {
  if (kind == "Node") return RemoveNode{name};
  if (kind == "Namespace") return DeleteNamespace{name};
  if (kind == "ResourceQuota") return DeleteResourceQuota{{ns, name}};
  if (kind == "LimitRange") return DeleteLimitRange{{ns, name}};
  if (kind == "PriorityClass") return DeletePriorityClass{name};
  if (kind == "PodDisruptionBudget") return DeletePodDisruptionBudget{{ns, name}};
  if (kind == "PoolPolicy") return DeletePoolPolicy{};
  if (kind == "ElasticQuota") return DeleteElasticQuota{{ns, name}};
  if (kind == "PriceBook") return DeletePriceBook{name};
  if (kind == "QoS") return DeleteQoS{name};
  return std::nullopt;
}

}  // namespace arbiter::engine
