#include "core/engine/command.h"

#include "core/object_serial.h"
#include "core/overloaded.h"

namespace arbiter::engine {

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
          [](const SetPodDeadline&) { return "SetPodDeadline"; },
          [](const SetPodLabels&) { return "SetPodLabels"; },
      },
      c.op);
}

namespace {

using serial::Io;

template <typename A>
void IoRef(A& a, ObjectRef& r) {
  Io(a, r.namespace_);
  Io(a, r.name);
}
template <typename A>
void IoId(A& a, WorkloadId& id) {
  uint64_t v = Value(id);
  Io(a, v);
  id = static_cast<WorkloadId>(v);
}

// The fields of each command, after its index in CommandOp.
template <typename A>
void IoOp(A& a, CommandOp& op) {
  std::visit(Overloaded{
                 [](Tick&) {},
                 [&](SubmitPod& c) {
                   Io(a, c.pod);
                   Io(a, c.immediate);
                   Io(a, c.allowed_gpu_models);
                   if (!a.boundless) Io(a, c.node);  // version 11
                 },
                 [&](DeletePod& c) {
                   IoId(a, c.id);
                   Io(a, c.grace_period);
                   if (a.shortenless)
                     c.shorten = false;
                   else
                     Io(a, c.shorten);  // version 12
                 },
                 [&](PodFinished& c) {
                   IoId(a, c.id);
                   Io(a, c.exit_code);
                 },
                 [&](VictimExited& c) { IoId(a, c.id); },
                 [&](UpsertNode& c) {
                   Io(a, c.node);
                   Io(a, c.order);
                 },
                 [&](RemoveNode& c) { Io(a, c.name); },
                 [&](UpsertNamespace& c) { Io(a, c.ns); },
                 [&](DeleteNamespace& c) { Io(a, c.name); },
                 [&](UpsertResourceQuota& c) { Io(a, c.quota); },
                 [&](DeleteResourceQuota& c) { IoRef(a, c.ref); },
                 [&](UpsertLimitRange& c) { Io(a, c.limit_range); },
                 [&](DeleteLimitRange& c) { IoRef(a, c.ref); },
                 [&](UpsertPriorityClass& c) { Io(a, c.priority_class); },
                 [&](DeletePriorityClass& c) { Io(a, c.name); },
                 [&](UpsertPodDisruptionBudget& c) { Io(a, c.pdb); },
                 [&](DeletePodDisruptionBudget& c) { IoRef(a, c.ref); },
                 [&](UpsertElasticQuota& c) { Io(a, c.quota); },
                 [&](DeleteElasticQuota& c) { IoRef(a, c.ref); },
                 [&](UpsertQoS& c) { Io(a, c.qos); },
                 [&](DeleteQoS& c) { Io(a, c.name); },
                 [&](UpsertPoolPolicy& c) { Io(a, c.policy); },
                 [](DeletePoolPolicy&) {},
                 [&](UpsertPriceBook& c) { Io(a, c.price_book); },
                 [&](DeletePriceBook& c) { Io(a, c.name); },
                 [&](SetPodDeadline& c) {
                   IoId(a, c.id);
                   Io(a, c.active_deadline);
                 },
                 [&](SetPodLabels& c) {
                   IoId(a, c.id);
                   Io(a, c.labels);
                 },
             },
             op);
}

// A CommandOp holding alternative `index`, default-constructed.
template <size_t I = 0>
bool MakeOp(size_t index, CommandOp* op) {
  if constexpr (I < std::variant_size_v<CommandOp>) {
    if (index == I) {
      op->template emplace<I>();
      return true;
    }
    return MakeOp<I + 1>(index, op);
  } else {
    return false;
  }
}

}  // namespace

std::string EncodeCommand(const Command& c) {
  serial::Writer w;
  Io(w, c.time);
  w.U32(static_cast<uint32_t>(c.op.index()));
  IoOp(w, const_cast<CommandOp&>(c.op));
  return serial::Seal("command", kCommandVersion, w.bytes());
}

Result<Command> DecodeCommand(std::string_view bytes) {
  uint32_t version = 0;
  auto body = serial::Unseal(bytes, "command", 2, kCommandVersion, &version);
  if (!body.ok()) return body.status();
  serial::Reader r(*body);
  r.flavorless = version < 3;
  r.latencyless = version < 4;
  r.depthless = version < 5;
  r.constraintless = version < 6;
  r.schedless = version < 7;
  r.topologyless = version < 7;
  r.backoffless = version < 9;
  r.heldless = version < 10;
  r.boundless = version < 11;
  r.shortenless = version < 12;
  r.namespaceless = version < 13;
  r.submitless = version < 14;
  Command c;
  Io(r, c.time);
  const uint32_t index = r.U32();
  if (!r.ok() || !MakeOp(index, &c.op))
    return Result<Command>::Error(
        "corrupt command: " + (r.ok() ? "an unknown command " + std::to_string(index) : r.error()));
  IoOp(r, c.op);
  if (!r.ok()) return Result<Command>::Error("corrupt command: " + r.error());
  if (!r.AtEnd()) return Result<Command>::Error("corrupt command: bytes after the end");
  return c;
}

}  // namespace arbiter::engine
