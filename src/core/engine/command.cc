#include "core/engine/command.h"

namespace arbiter::engine {

namespace {
template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;
}  // namespace

const char* CommandName(const Command& c) {
  return std::visit(
      Overloaded{
          [](const Tick&) { return "Tick"; },
          [](const SubmitPod&) { return "SubmitPod"; },
          [](const DeletePod&) { return "DeletePod"; },
          [](const PodFinished&) { return "PodFinished"; },
          [](const VictimExited&) { return "VictimExited"; },
          [](const UpsertNode&) { return "UpsertNode"; },
          [](const RemoveNode&) { return "RemoveNode"; },
          [](const UpsertNamespace&) { return "UpsertNamespace"; },
          [](const DeleteNamespace&) { return "DeleteNamespace"; },
          [](const UpsertResourceQuota&) { return "UpsertResourceQuota"; },
          [](const DeleteResourceQuota&) { return "DeleteResourceQuota"; },
          [](const UpsertLimitRange&) { return "UpsertLimitRange"; },
          [](const DeleteLimitRange&) { return "DeleteLimitRange"; },
          [](const UpsertPriorityClass&) { return "UpsertPriorityClass"; },
          [](const DeletePriorityClass&) { return "DeletePriorityClass"; },
          [](const UpsertPodDisruptionBudget&) { return "UpsertPodDisruptionBudget"; },
          [](const DeletePodDisruptionBudget&) { return "DeletePodDisruptionBudget"; },
          [](const UpsertElasticQuota&) { return "UpsertElasticQuota"; },
          [](const DeleteElasticQuota&) { return "DeleteElasticQuota"; },
          [](const UpsertQoS&) { return "UpsertQoS"; },
          [](const DeleteQoS&) { return "DeleteQoS"; },
          [](const UpsertPoolPolicy&) { return "UpsertPoolPolicy"; },
          [](const DeletePoolPolicy&) { return "DeletePoolPolicy"; },
          [](const UpsertPriceBook&) { return "UpsertPriceBook"; },
          [](const DeletePriceBook&) { return "DeletePriceBook"; },
      },
      c.op);
}

}  // namespace arbiter::engine
