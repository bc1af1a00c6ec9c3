// ElasticQuota reclaim (Kueue's reclaimWithinCohort): a namespace within its guaranteed min
// takes lent quota back from the cohort's borrowers, by preemption.
#include <algorithm>
#include <climits>
#include <set>

#include "core/engine/fair_share.h"
#include "core/engine/lost_work.h"
#include "core/engine/reasons.h"
#include "core/engine/state.h"

namespace arbiter::engine {

namespace {
// Step 3 of TryReclaim (Kueue admits by quota and evicts its victims; kube-scheduler then
// preempts on a node by priority): with the quota victims `gone` given back, a priority
// preemption plan for `w` on one node (TryPreempt's dry run, Kubernetes' rules: lower priority,
// guaranteed quota protected, minRuntime, PDBs with `gone` charged to their budgets first; `gone`
// are no candidates). Under disruptionBudgets: Strict the node victims and the quota victims of
// `w`'s own namespace must respect the budgets (borrowed victims use up allowance, never
// violate: State::QuotaVictimViolations). False with `why` (the reason, without its leading space
// and final period); nothing is evicted either way (a victim too young to preempt schedules a
// wake-up).
bool PlanRoomAfterQuotaVictims(State& s, Workload& w, const std::vector<Slot>& gone,
                               PreemptDryRun* plan, std::string* why) {
  std::vector<char> excluded(s.workloads.size(), 0), touched(s.nodes.size(), 0);
  std::vector<State::Tentative> log;
  ++s.pool_version;
  for (Slot v : gone) {
    excluded[v] = 1;
    s.ReleaseTentative(log, v, &touched);
  }
  plan->excluded = &excluded;
  plan->touched = &touched;
  std::string preempt_why;
  bool ok = s.TryPreempt(w, &preempt_why, plan);
  s.UndoTentative(log);
  ++s.pool_version;  // no-fit reasons seen during the dry run are not kept
  plan->excluded = plan->touched = nullptr;
  if (!ok) {
    size_t b = preempt_why.find_first_not_of(' ');
    *why = b == std::string::npos ? std::string("no plan") : preempt_why.substr(b);
    if (!why->empty() && why->back() == '.') why->pop_back();
    return false;
  }
  if (s.policy.disruption_budgets == DisruptionBudgetMode::kStrict && !s.pdbs.empty()) {
    std::vector<State::PdbState> pdb_state;
    s.ComputePdbState(&pdb_state);
    std::vector<std::string> names;  // borrowed quota victims are no violations (pdb.cc)
    if (s.QuotaVictimViolations(w, gone, plan->victims, pdb_state, &names) > 0) {
      *why = "its victims together would violate " + State::BudgetList(std::move(names)) +
             " (disruptionBudgets: Strict)";
      return false;
    }
  }
  return true;
}
}  // namespace

bool State::FitsOnceGone(uint32_t pos, const Workload& w, const std::vector<Slot>& gone) const {
  if (!NodeSelectable(pos, w)) return false;
  const NodeLive& info = node_live[pos];
  placement::FitView after;
  after.Reset(nodes[pos]);
  for (Slot s : info.workloads) {
    const Workload& v = workloads[s];
    if (v.phase == Phase::kTerminating || std::find(gone.begin(), gone.end(), s) != gone.end())
      after.Give(v.shape, v.gpus);
  }
  // Room held for nominated workloads of equal or higher priority stays held.
  for (Slot s : info.nominated) {
    const Workload& p = workloads[s];
    if (p.id == w.id || p.priority < w.priority) continue;
    if (!after.Fits(p.shape)) return false;
    after.Hold(p.shape);
  }
  return after.Fits(w.shape);
}

// Quota preemption (Kueue's classical preemption, quota_preemption.cc: candidates, their order,
// validity and the attempts) with Arbiter's placement dry run: a victim set is chosen greedily in
// candidate order and made minimal (victims given back from the last chosen). The preemptor must
// also be placeable once the victims exit:
//   1. the minimal quota-freeing set, if the preemptor then fits on some node (or fits already);
//   2. else, per node, a minimal set that frees the quota and makes room on that node (victims
//      beyond the quota's needs only from that node); the best by highest victim priority, then
//      fewest victims, then priority sum, then (victimOrder LeastLostWork) the least work lost,
//      then node order; the preemptor is nominated to it;
//   3. else the minimal quota-freeing set combined with priority preemption for room on one node
//      (Kubernetes' rules, PlanRoomAfterQuotaVictims): what Kueue's eviction followed by
//      kube-scheduler's preemption would do, but planned whole before anything is evicted;
//   4. else nothing is evicted, and `why` says so.
// Budgets (issue 27): a PodDisruptionBudget protects only pods within their namespace's own min,
// so reclaiming lent quota never depends on the borrower's goodwill: a victim of another
// namespace (taken only while that namespace is above its min) is never held back by its
// budgets, though it uses up their allowed disruptions. Under disruptionBudgets: Strict a
// withinNamespace candidate whose eviction would break a budget is skipped, and the reason names
// the budget when that leaves the quota unfreed (BestEffort ignores budgets, as Kueue does).
bool State::TryReclaim(Workload& w, const QuotaBook::ElasticResult& eq, std::string* why,
                       std::string* wait) {
  (void)eq;
  const QuotaCandidates c = CollectQuotaCandidates(w);
  // Like preemption: come back when a protected candidate turns minRuntime old, even if nothing
  // else happens in the pool by then.
  if (c.young_until) wakeups.push(*c.young_until);
  if (c.slots.empty()) {
    *wait = YoungCandidatesMessage(w, c);
    if (c.beyond_min)  // Kueue's NoFit: the request alone is above the nominal quota
      *why =
          "; its request exceeds the min of its ElasticQuota, and only borrowWithinCohort "
          "would let it preempt while borrowing";
    return false;
  }
  const bool strict = policy.disruption_budgets == DisruptionBudgetMode::kStrict && !pdbs.empty();
  std::vector<PdbState> pdb_state;
  if (strict) ComputePdbState(&pdb_state);
  auto released_of = [&](const std::vector<Slot>& victims) {
    std::vector<const Workload*> released = c.base;
    for (Slot s : victims) released.push_back(&workloads[s]);
    return released;
  };
  // Under fair sharing (fair_preemption.cc) the strategies choose; the picks of each plan are
  // kept for the victims' messages.
  const std::string* cohort = quota.CohortOf(w.namespace_);
  const bool fair = cohort && quota.FairSharing(*cohort);
  std::vector<std::pair<std::optional<uint32_t>, std::vector<FairPick>>> fair_plans;
  std::set<std::string> blocking;  // budgets that protected a candidate (Strict)
  // A minimal victim set that frees the quota and, with `node`, makes room there.
  auto build = [&](std::optional<uint32_t> node) -> std::optional<std::vector<Slot>> {
    if (fair) {
      std::vector<std::string> names;
      auto picks = FairVictims(w, c, node, strict ? &pdb_state : nullptr, &names);
      blocking.insert(names.begin(), names.end());
      if (!picks) return std::nullopt;
      std::vector<Slot> out;
      for (const FairPick& p : *picks) out.push_back(p.slot);
      fair_plans.emplace_back(node, std::move(*picks));
      return out;
    }
    for (const bool allow : c.attempts) {
      std::vector<Slot> chosen;
      std::vector<const Workload*> released = c.base;
      bool freed_quota = false, room = !node || FitsOnceGone(*node, w, chosen);
      for (size_t k = 0; k < c.slots.size(); ++k) {
        if (freed_quota && room) break;
        const Slot s = c.slots[k];
        const bool here = node && workloads[s].node == node_at[*node];
        if (freed_quota && !here) continue;  // quota is free: only victims on the node still help
        if (!QuotaCandidateValid(c, k, released, allow)) continue;
        chosen.push_back(s);
        std::vector<std::string> names;
        if (strict && QuotaVictimViolations(w, chosen, {}, pdb_state, &names) > 0) {
          blocking.insert(names.begin(), names.end());
          chosen.pop_back();
          continue;
        }
        released.push_back(&workloads[s]);
        if (!freed_quota) freed_quota = QuotaFitsOnceGone(w, released, allow);
        if (!room && here) room = FitsOnceGone(*node, w, chosen);
      }
      if (!freed_quota || !room) continue;
      for (size_t k = chosen.size(); k-- > 0;) {
        std::vector<Slot> without = chosen;
        without.erase(without.begin() + static_cast<long>(k));
        if (QuotaFitsOnceGone(w, released_of(without), allow) &&
            (!node || FitsOnceGone(*node, w, without)))
          chosen = std::move(without);
      }
      return chosen;
    }
    return std::nullopt;
  };
  auto quota_only = build(std::nullopt);
  if (!quota_only || quota_only->empty()) {  // the candidates cannot free enough quota
    *wait = YoungCandidatesMessage(w, c);
    if (!blocking.empty())
      *why = "; not preempting within namespace " + w.namespace_ + ": " +
             BudgetList({blocking.begin(), blocking.end()}) +
             " protects the workloads that would free it (disruptionBudgets: Strict)";
    return false;
  }
  std::vector<Slot> victims;
  std::vector<Slot> for_room;  // step 3: victims of the priority preemption for room
  std::optional<uint32_t> nominate;
  std::optional<uint32_t> picks_at;  // the fair plan whose picks explain the quota victims
  bool placeable = false;
  for (uint32_t i = 0; i < nodes.size() && !placeable; ++i)
    placeable = NodeSelectable(i, w) && FitsRespectingNominated(i, w);
  for (uint32_t i = 0; i < nodes.size() && !placeable; ++i)
    placeable = FitsOnceGone(i, w, *quota_only);
  if (placeable) {
    victims = std::move(*quota_only);
  } else {
    struct NodePlan {
      uint32_t node;
      std::vector<Slot> victims;
      int32_t max_priority;
      int64_t sum_priority;
      LostWork lost;  // under victimOrder LeastLostWork
    };
    const bool lost_work = policy.victim_order == VictimOrder::kLeastLostWork;
    std::optional<NodePlan> best;
    std::vector<Slot> here;
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      here.clear();
      for (Slot s : c.slots)
        if (workloads[s].node == node_at[i]) here.push_back(s);
      if (!FitsOnceGone(i, w, here)) continue;  // not even with every candidate here gone
      auto set = build(i);
      if (!set) continue;
      NodePlan plan{i, std::move(*set), INT32_MIN, 0, {}};
      for (Slot s : plan.victims) {
        plan.max_priority = std::max(plan.max_priority, workloads[s].priority);
        plan.sum_priority += workloads[s].priority;
        if (lost_work) plan.lost += LostWorkIfStopped(workloads[s], GraceOf(workloads[s]), now);
      }
      auto better = [](const NodePlan& a, const NodePlan& b) {
        if (a.max_priority != b.max_priority) return a.max_priority < b.max_priority;
        if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
        if (a.sum_priority != b.sum_priority) return a.sum_priority < b.sum_priority;
        if (a.lost != b.lost) return a.lost < b.lost;  // zero unless LeastLostWork
        return a.node < b.node;
      };
      if (!best || better(plan, *best)) best = std::move(plan);
    }
    if (!best) {
      PreemptDryRun room;
      std::string room_why;
      if (!PlanRoomAfterQuotaVictims(*this, w, *quota_only, &room, &room_why)) {
        *why = cohort && !cohort->empty()
                   ? "; not reclaiming: no node would have room for it even after the borrowing "
                     "workloads of cohort " +
                         *cohort + " exit (" + NoFitMessage(w) + ")"
                   : "; not preempting: no node would have room for it even after lower-priority "
                     "workloads of namespace " +
                         w.namespace_ + " exit (" + NoFitMessage(w) + ")";
        *why += ", nor by preempting for room (" + room_why + ")";
        return false;
      }
      victims = std::move(*quota_only);
      for_room = std::move(room.victims);
      nominate = room.pos;
    } else {
      victims = std::move(best->victims);
      nominate = picks_at = best->node;
    }
  }
  std::sort(victims.begin(), victims.end(),
            [&](Slot a, Slot b) { return Value(workloads[a].id) < Value(workloads[b].id); });
  const std::vector<FairPick>* picks = nullptr;
  for (const auto& [at, plan] : fair_plans)
    if (at == picks_at) picks = &plan;
  size_t own = 0, toward_fair = 0;
  for (Slot s : victims) {
    const FairPick* pick = nullptr;
    if (picks)
      for (const FairPick& p : *picks)
        if (p.slot == s) pick = &p;
    if (workloads[s].namespace_id == w.namespace_id) {
      ++own;
      StopWithinNamespace(workloads[s], w);
    } else if (pick) {
      const std::string msg = FairWhy(w, *pick);
      const bool reclaim = pick->rule == FairRule::kWithinNominal;
      toward_fair += reclaim ? 0 : 1;
      StopVictim(workloads[s], w, reclaim ? EventType::kReclaimed : EventType::kPreempted, &msg);
    } else {
      StopVictim(workloads[s], w, EventType::kReclaimed);
    }
  }
  if (!for_room.empty()) {  // step 3: the node's victims, by Kubernetes' priority rules
    const std::string& node_name = nodes[*nominate].name;
    std::string list;
    for (Slot s : for_room) list += (list.empty() ? "" : ", ") + workloads[s].key;
    Emit(EventType::kPreempting, w, node_name, reason::kPreempting,
         "preempting " + list + " on " + node_name +
             " (the quota victims alone leave no node with room)");
    for (Slot s : for_room) StopVictim(workloads[s], w, EventType::kPreempted);
  }
  w.waiting_for = victims;
  w.waiting_for.insert(w.waiting_for.end(), for_room.begin(), for_room.end());
  if (nominate) Nominate(w, *nominate);  // hold the room the victims leave on that node
  quota.Reserve(w);
  const std::string tail =
      (for_room.empty() ? ""
                        : " and " + std::to_string(for_room.size()) +
                              " lower-priority workload(s) preempted for room") +
      " to exit" + (nominate ? " (nominated to " + nodes[*nominate].name + ")" : "");
  if (toward_fair > 0)
    SetPending(w, EventType::kQuotaExceeded, reason::kReclaiming,
               "preempting toward fair shares in cohort " + *cohort + " (namespace " +
                   w.namespace_ +
                   "'s share once admitted: " + FormatShare(picks->front().preemptor_share) +
                   "): waiting for " + std::to_string(victims.size()) + " workload(s)" + tail);
  else if (own == 0)
    SetPending(w, EventType::kQuotaExceeded, reason::kReclaiming,
               "reclaiming lent quota: waiting for " + std::to_string(victims.size()) +
                   " borrowing workload(s)" + tail);
  else
    SetPending(w, EventType::kQuotaExceeded, reason::kReclaiming,
               "preempting within the quota of namespace " + w.namespace_ + ": waiting for " +
                   std::to_string(victims.size()) + " workload(s)" + tail);
  return true;
}

}  // namespace arbiter::engine
