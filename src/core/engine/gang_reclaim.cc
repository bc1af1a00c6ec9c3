// Quota preemption for a pod group (ElasticQuota spec.preemption: reclaimWithinCohort,
// withinNamespace, borrowWithinCohort), all or nothing, by the planner of reclaim_planner.h.
//
// A group whose members do not all fit their namespace's ElasticQuota is planned as one
// preemptor: the sum of the requests of its members that hold no quota yet, at the lowest
// priority and the latest submission among them (a victim must be a valid victim for every
// member). Candidates, their order, validity and the attempts are Kueue's, as for a single
// workload (quota_preemption.cc); members of the group itself are never candidates. Per attempt:
// the victim set is the minimal one freeing the quota for the whole group (greedy in candidate
// order, then victims given back from the last chosen while the group still fits). Then the
// placement dry run: with the victims' room given back, every pending member must find room in
// queue order (each one's room taken before the next is tried); if the minimal set leaves a member
// without room, every valid candidate is tried as gone and, if the group then fits, victims are
// given back from the last while the quota and the room still suffice. If even that leaves a
// member without room, the minimal quota set is combined with priority preemption for room
// (Kubernetes' rules, as for a group that fits its quota but not the nodes: each member in queue
// order takes free room or a plan of its own, the quota victims and earlier members' victims
// counted as gone). Otherwise the next attempt, else nothing is evicted. On success every victim
// gets SIGTERM, every member is nominated to its node and holds its quota, and the group binds
// together once the victims have exited.
#include <algorithm>
#include <optional>

#include "core/engine/reclaim_planner.h"
#include "core/engine/state.h"

namespace arbiter::engine {

namespace {
class GroupReclaim final : public ReclaimPlanner {
 public:
  GroupReclaim(State& s, const Workload& sum, const Gang& g, const std::vector<Slot>& pend)
      : ReclaimPlanner(s, sum, pend, "pod group " + g.key) {}

 private:
  bool StepPlaceable(const std::vector<Slot>& gone, Plan* plan) override;
  bool StepRoom(const std::vector<bool>& attempts, Plan* plan) override;
  bool StepCombined(const std::vector<Slot>& gone, Plan* plan) override;
  std::string NoRoomSubject() const override {
    return "the group would not have room for every member";
  }
};

// The placement dry run: the victims' room given back, then every member placed in turn.
bool GroupReclaim::StepPlaceable(const std::vector<Slot>& gone, Plan* plan) {
  std::vector<State::Tentative> log;
  std::vector<PlaceChoice> choice(members_.size());
  ++s_.pool_version;
  for (Slot v : gone) s_.ReleaseTentative(log, v, nullptr);
  bool ok = true;
  for (size_t k = 0; k < members_.size() && ok; ++k) {
    Workload& m = s_.workloads[members_[k]];
    ok = s_.TryPlace(m, &choice[k]);
    if (ok) s_.ApplyTentative(log, choice[k].pos, m.shape, choice[k].gpus, true, nullptr, m.slot);
  }
  s_.UndoTentative(log);
  ++s_.pool_version;  // no-fit reasons seen during the dry run are not kept
  if (ok)
    for (size_t k = 0; k < members_.size(); ++k) plan->at[k] = choice[k].pos;
  return ok;
}

// Every valid candidate tried as gone, then given back while the quota and the room suffice.
bool GroupReclaim::StepRoom(const std::vector<bool>& attempts, Plan* plan) {
  auto more = MinimalSet(attempts, Room{Room::Kind::kMembers, 0});
  if (!more || more->empty()) return false;
  plan->victims = std::move(*more);
  StepPlaceable(plan->victims, plan);  // the members' nodes for this victim set
  return true;
}

// `gone` (quota victims) given back, then each member in queue order takes free room or a
// priority preemption plan of its own (TryPreempt's dry run; victims of the plan so far are
// excluded).
bool GroupReclaim::StepCombined(const std::vector<Slot>& gone, Plan* plan) {
  for (Slot m : members_)
    if (s_.workloads[m].preemption_policy == PreemptionPolicy::kNever) {
      room_why_ = "a member's preemptionPolicy is Never";
      return false;
    }
  std::vector<char> excluded(s_.workloads.size(), 0), touched(s_.nodes.size(), 0);
  std::vector<State::Tentative> log;
  std::vector<PreemptDryRun> node_plans;
  ++s_.pool_version;
  for (Slot v : gone) {
    excluded[v] = 1;
    s_.ReleaseTentative(log, v, &touched);
  }
  bool ok = s_.PlanRoomForMembers(members_, log, excluded, touched, node_plans, &room_why_);
  s_.UndoTentative(log);
  ++s_.pool_version;
  if (ok && sets().strict()) {  // each plan respected the budgets alone; all victims together too
    std::vector<Slot> all;
    for (const PreemptDryRun& p : node_plans)
      all.insert(all.end(), p.victims.begin(), p.victims.end());
    std::vector<std::string> names;
    if (s_.QuotaVictimViolations(pre_, gone, all, sets().pdb_state(), &names) > 0) {
      room_why_ = "its victims together would violate " + State::BudgetList(std::move(names)) +
                  " (disruptionBudgets: Strict)";
      ok = false;
    }
  }
  if (!ok) return false;
  for (size_t k = 0; k < members_.size(); ++k) plan->at[k] = node_plans[k].pos;
  plan->for_room = std::move(node_plans);
  return true;
}
}  // namespace

bool State::TryReclaimGang(Gang& g, const std::vector<Slot>& pend, std::string* why,
                           std::string* wait) {
  // The group as one preemptor.
  const Workload* first = nullptr;
  Workload sum;
  for (Slot s : pend) {
    const Workload& m = workloads[s];
    if (!m.bound_node().empty()) return false;  // it runs already (SubmitPod::node)
    if (!m.has_quota || quota.Holds(m)) continue;
    if (!first) {
      first = &m;
      sum = m;
      sum.requests = ResourceList{};
    } else if (m.flavor != first->flavor) {
      return false;  // members on different flavors: no single quota plan
    }
    sum.requests += m.requests;
    sum.priority = std::min(sum.priority, m.priority);
    sum.submit_time = std::max(sum.submit_time, m.submit_time);
  }
  if (!first || !quota.HasElastic(sum.namespace_)) return false;
  return GroupReclaim(*this, sum, g, pend).Run(why, wait);
}

}  // namespace arbiter::engine
