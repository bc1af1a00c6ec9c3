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

namespace {
// The first of `objects` as the command `Op`, if there is one.
template <typename Op, typename T>
std::optional<engine::CommandOp> FirstAs(const std::vector<T>& objects) {
  if (objects.empty()) return std::nullopt;
  return engine::CommandOp(Op{objects.front()});
}
}  // namespace

std::optional<engine::CommandOp> UpsertCommand(KindId kind, const ManifestSet& m) {
  switch (kind) {
    case KindId::kPod:
      if (m.pods.empty()) return std::nullopt;
      return engine::SubmitPod{m.pods.front(), false, {}};
    case KindId::kNode:
      if (m.nodes.empty()) return std::nullopt;
      return engine::UpsertNode{m.nodes.front(), 0};
    case KindId::kPoolPolicy:
      if (!m.pool_policy) return std::nullopt;
      return engine::UpsertPoolPolicy{*m.pool_policy};
    case KindId::kNamespace:
      return FirstAs<engine::UpsertNamespace>(m.namespaces);
    case KindId::kResourceQuota:
      return FirstAs<engine::UpsertResourceQuota>(m.resource_quotas);
    case KindId::kLimitRange:
      return FirstAs<engine::UpsertLimitRange>(m.limit_ranges);
    case KindId::kPriorityClass:
      return FirstAs<engine::UpsertPriorityClass>(m.priority_classes);
    case KindId::kPodDisruptionBudget:
      return FirstAs<engine::UpsertPodDisruptionBudget>(m.pdbs);
    case KindId::kElasticQuota:
      return FirstAs<engine::UpsertElasticQuota>(m.elastic_quotas);
    case KindId::kPriceBook:
      return FirstAs<engine::UpsertPriceBook>(m.price_books);
    case KindId::kQoS:
      return FirstAs<engine::UpsertQoS>(m.qos);
    case KindId::kEvent:
    case KindId::kResourceFlavor:
    case KindId::kPodGroup:
    case KindId::kJob:  // a Job is its pods (serve's Job controller makes them)
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<engine::CommandOp> DeleteCommand(KindId kind, const std::string& ns,
                                               const std::string& name) {
  switch (kind) {
    case KindId::kNode:
      return engine::RemoveNode{name};
    case KindId::kNamespace:
      return engine::DeleteNamespace{name};
    case KindId::kResourceQuota:
      return engine::DeleteResourceQuota{{ns, name}};
    case KindId::kLimitRange:
      return engine::DeleteLimitRange{{ns, name}};
    case KindId::kPriorityClass:
      return engine::DeletePriorityClass{name};
    case KindId::kPodDisruptionBudget:
      return engine::DeletePodDisruptionBudget{{ns, name}};
    case KindId::kPoolPolicy:
      return engine::DeletePoolPolicy{};
    case KindId::kElasticQuota:
      return engine::DeleteElasticQuota{{ns, name}};
    case KindId::kPriceBook:
      return engine::DeletePriceBook{name};
    case KindId::kQoS:
      return engine::DeleteQoS{name};
    case KindId::kPod:
    case KindId::kEvent:
    case KindId::kResourceFlavor:
    case KindId::kPodGroup:
    case KindId::kJob:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<engine::CommandOp> DeleteCommand(const std::string& kind, const std::string& ns,
                                               const std::string& name) {
  const ApiKind* k = FindApiKind(kind);
  if (!k) return std::nullopt;
  return DeleteCommand(k->id, ns, name);
}

}  // namespace arbiter::driver
