// SetPodDeadline and SetPodLabels (command.h): a pod's spec.activeDeadlineSeconds set or lowered,
// or its labels changed, by an update, and the workload classes both are part of.
#include <algorithm>

#include "core/engine/state.h"

namespace arbiter::engine {

void State::AssignClasses(Workload& x) {
  // Interned: find first, so that a known key allocates nothing.
  auto intern = [&](std::string key) {
    auto it = class_ids.find(key);
    if (it == class_ids.end())
      it = class_ids.emplace(std::move(key), static_cast<uint32_t>(class_ids.size())).first;
    return it->second;
  };
  std::string k = ShapeKey(x);
  x.shape_class = intern(k);
  k += "|" + x.namespace_ + "|" + (x.qos >= 0 ? qos_names[static_cast<size_t>(x.qos)] : "") + "|" +
       ToString(x.preemption_policy);
  if (x.gang != kNoGang) k += "|gang|" + gangs[x.gang].key;  // a group fails or succeeds as one
  x.preempt_class = intern(std::move(k));
}

Status State::SetPodDeadlineCmd(const SetPodDeadline& c) {
  const Slot slot = SlotOf(c.id);
  if (slot == kNoSlot)
    return Status::NotFound("SetPodDeadline: no live workload " + std::to_string(Value(c.id)));
  if (c.active_deadline <= 0)
    return Status::InvalidArgument("SetPodDeadline: the deadline must be positive");
  Workload& w = workloads[slot];
  if (w.time_limit > 0 && c.active_deadline > w.time_limit)
    return Status::FailedPrecondition("SetPodDeadline: " + w.key +
                                      ": a time limit may be lowered, not raised");
  if (c.active_deadline == w.time_limit) return Status::Ok();
  // The time limit is part of the workload's classes (queue.cc ShapeKey), and whether it has one
  // of its quota scopes (Terminating): the queue and quota usage are rebuilt around the change.
  const bool pending = IsPending(slot);
  if (pending) PendingErase(slot);
  const bool scope_changes = w.time_limit == 0;
  if (scope_changes) DropQuotaHolds();
  if (w.node != kNoNode && !EndKnown(w)) ++ends_known;  // its end becomes known
  w.time_limit = c.active_deadline;
  if (scope_changes) QuotaChanged();
  AssignClasses(w);
  if (pending) PendingInsert(slot);
  freed = true;  // the next cycle looks at the whole queue (reservations move)
  ++global_epoch;
  return Status::Ok();
}

Status State::SetPodLabelsCmd(const SetPodLabels& c) {
  const Slot slot = SlotOf(c.id);
  if (slot == kNoSlot)
    return Status::NotFound("SetPodLabels: no live workload " + std::to_string(Value(c.id)));
  Workload& w = workloads[slot];
  if (w.labels == c.labels) return Status::Ok();
  // The labels are part of its classes once pod topology rules were seen (AppendTopologyKey):
  // the queue is rebuilt around the change, as for a deadline.
  const bool pending = IsPending(slot);
  if (pending) PendingErase(slot);
  w.labels = c.labels;
  const bool was_member = !w.pdbs.empty();
  MatchPdbs(w);
  if (was_member && w.pdbs.empty())
    pdb_members.erase(std::remove(pdb_members.begin(), pdb_members.end(), slot), pdb_members.end());
  else if (!was_member && !w.pdbs.empty())
    pdb_members.push_back(slot);
  AssignClasses(w);
  if (pending) PendingInsert(slot);
  freed = true;    // the next cycle looks at the whole queue (affinity and budgets moved)
  ++global_epoch;  // (the preemption plans cached with the old budgets are dropped)
  return Status::Ok();
}

}  // namespace arbiter::engine
