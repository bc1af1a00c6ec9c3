#include "driver/object_commands.h"

namespace arbiter::driver {

std::vector<engine::CommandOp> PolicyUpsertCommands(const ManifestSet& m) {
  std::vector<engine::CommandOp> out;
  if (m.pool_policy) out.emplace_back(engine::UpsertPoolPolicy{*m.pool_policy});
  for (const auto& pc : m.priority_classes) out.emplace_back(engine::UpsertPriorityClass{pc});
  for (const auto& q : m.qos) out.emplace_back(engine::UpsertQoS{q});
  for (const auto& n : m.namespaces) out.emplace_back(engine::UpsertNamespace{n});
  for (const auto& lr : m.limit_ranges) out.emplace_back(engine::UpsertLimitRange{lr});
  for (const auto& q : m.resource_quotas) out.emplace_back(engine::UpsertResourceQuota{q});
  for (const auto& q : m.elastic_quotas) out.emplace_back(engine::UpsertElasticQuota{q});
  for (const auto& p : m.pdbs) out.emplace_back(engine::UpsertPodDisruptionBudget{p});
  for (const auto& b : m.price_books) out.emplace_back(engine::UpsertPriceBook{b});
  return out;
}

std::optional<engine::CommandOp> DeleteCommand(const std::string& kind, const std::string& ns,
                                               const std::string& name) {
  if (kind == "Node") return engine::RemoveNode{name};
  if (kind == "Namespace") return engine::DeleteNamespace{name};
  if (kind == "ResourceQuota") return engine::DeleteResourceQuota{{ns, name}};
  if (kind == "LimitRange") return engine::DeleteLimitRange{{ns, name}};
  if (kind == "PriorityClass") return engine::DeletePriorityClass{name};
  if (kind == "PodDisruptionBudget") return engine::DeletePodDisruptionBudget{{ns, name}};
  if (kind == "PoolPolicy") return engine::DeletePoolPolicy{};
  if (kind == "ElasticQuota") return engine::DeleteElasticQuota{{ns, name}};
  if (kind == "PriceBook") return engine::DeletePriceBook{name};
  if (kind == "QoS") return engine::DeleteQoS{name};
  return std::nullopt;
}

}  // namespace arbiter::driver
