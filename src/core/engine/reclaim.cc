// ElasticQuota reclaim (Kueue's reclaimWithinCohort): a namespace within its guaranteed min
// takes lent quota back from the cohort's borrowers, by preemption.
#include <algorithm>
#include <climits>

#include "core/engine/reasons.h"
#include "core/engine/state.h"

namespace arbiter::engine {

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

// Candidates: running borrowers of other namespaces in the cohort (only lower-priority ones under
// reclaim: LowerPriority; none younger than minRuntime; under Strict budgets none whose eviction
// would break a PDB), lowest priority first, then most recently started. A victim set is chosen
// greedily in that order and then made minimal (victims given back from the last chosen). The
// reclaimer must also be placeable once the victims exit:
//   1. the minimal quota-freeing set, if the reclaimer then fits on some node (or fits already);
//   2. else, per node, a minimal set that frees the quota and makes room on that node (victims
//      beyond the quota's needs only from that node); the best by highest victim priority, then
//      fewest victims, then priority sum, then node order; the reclaimer is nominated to it;
//   3. else no reclaim, and `why` says so.
bool State::TryReclaim(Workload& w, const QuotaBook::ElasticResult& eq, std::string* why) {
  if (!eq.within_min || eq.over_max) return false;
  const std::string* cohort = quota.CohortOf(w.namespace_);
  if (!cohort || cohort->empty()) return false;
  std::vector<Slot> cands;
  std::optional<Millis> young_until;  // when the first borrower skipped as too young comes of age
  for (const auto& [ns_id, running] : borrowed_by_ns) {  // running borrowers only, not every workload
    for (Slot s : running) {
      const Workload& v = workloads[s];
      if (v.phase != Phase::kRunning || !v.borrowed || v.namespace_ == w.namespace_) continue;
      const std::string* c = quota.CohortOf(v.namespace_);
      if (!c || *c != *cohort) continue;
      if (policy.reclaim == ReclaimMode::kLowerPriority && v.priority >= w.priority) continue;
      if (now - v.run_start < policy.min_runtime) {
        const Millis at = v.run_start + policy.min_runtime;
        young_until = young_until ? std::min(*young_until, at) : at;
        continue;
      }
      cands.push_back(s);
    }
  }
  // Like preemption: come back when a protected borrower turns minRuntime old, even if nothing
  // else happens in the pool by then.
  if (young_until) wakeups.push(*young_until);
  if (cands.empty()) return false;
  // Lowest priority first, then most recently started.
  std::sort(cands.begin(), cands.end(), [&](Slot a, Slot b) {
    const Workload &x = workloads[a], &y = workloads[b];
    if (x.priority != y.priority) return x.priority < y.priority;
    if (x.run_start != y.run_start) return x.run_start > y.run_start;
    return x.key < y.key;
  });
  // Terminating workloads of the cohort are already on their way out.
  std::vector<const Workload*> base;
  for (const NodeLive& live : node_live)  // running and terminating workloads, node by node
    for (Slot s : live.workloads) {
      const Workload& v = workloads[s];
      if (v.phase == Phase::kTerminating && quota.CohortOf(v.namespace_) && *quota.CohortOf(v.namespace_) == *cohort)
        base.push_back(&v);
    }
  std::sort(base.begin(), base.end(), [](const Workload* a, const Workload* b) { return Value(a->id) < Value(b->id); });
  auto quota_ok = [&](const std::vector<Slot>& victims) {
    std::vector<const Workload*> released = base;
    for (Slot s : victims) released.push_back(&workloads[s]);
    return quota.CheckElastic(w, released).ok;
  };
  // Under disruptionBudgets: Strict a borrower whose eviction would break a PodDisruptionBudget
  // is skipped (BestEffort ignores budgets here, as Kueue's reclaim does).
  const bool strict = policy.disruption_budgets == DisruptionBudgetMode::kStrict && !pdbs.empty();
  std::vector<PdbState> pdb_state;
  if (strict) ComputePdbState(&pdb_state);
  // A minimal victim set that frees the quota and, with `node`, makes room there.
  auto build = [&](std::optional<uint32_t> node) -> std::optional<std::vector<Slot>> {
    std::vector<Slot> chosen;
    bool freed_quota = false, room = !node || FitsOnceGone(*node, w, chosen);
    for (Slot s : cands) {
      if (freed_quota && room) break;
      const bool here = node && workloads[s].node == node_at[*node];
      if (freed_quota && !here) continue;  // quota is free: only victims on the node still help
      chosen.push_back(s);
      if (strict && CountViolations(chosen, pdb_state, nullptr) > 0) {
        chosen.pop_back();
        continue;
      }
      if (!freed_quota) freed_quota = quota_ok(chosen);
      if (!room && here) room = FitsOnceGone(*node, w, chosen);
    }
    if (!freed_quota || !room) return std::nullopt;
    for (size_t k = chosen.size(); k-- > 0;) {
      std::vector<Slot> without = chosen;
      without.erase(without.begin() + static_cast<long>(k));
      if (quota_ok(without) && (!node || FitsOnceGone(*node, w, without))) chosen = std::move(without);
    }
    return chosen;
  };
  auto quota_only = build(std::nullopt);
  if (!quota_only || quota_only->empty()) return false;  // borrowers cannot free enough quota
  std::vector<Slot> victims;
  std::optional<uint32_t> nominate;
  bool placeable = false;
  for (uint32_t i = 0; i < nodes.size() && !placeable; ++i)
    placeable = NodeSelectable(i, w) && FitsRespectingNominated(i, w);
  for (uint32_t i = 0; i < nodes.size() && !placeable; ++i) placeable = FitsOnceGone(i, w, *quota_only);
  if (placeable) {
    victims = std::move(*quota_only);
  } else {
    struct NodePlan {
      uint32_t node;
      std::vector<Slot> victims;
      int32_t max_priority;
      int64_t sum_priority;
    };
    std::optional<NodePlan> best;
    std::vector<Slot> here;
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      here.clear();
      for (Slot s : cands)
        if (workloads[s].node == node_at[i]) here.push_back(s);
      if (!FitsOnceGone(i, w, here)) continue;  // not even with every borrower here gone
      auto set = build(i);
      if (!set) continue;
      NodePlan plan{i, std::move(*set), INT32_MIN, 0};
      for (Slot s : plan.victims) {
        plan.max_priority = std::max(plan.max_priority, workloads[s].priority);
        plan.sum_priority += workloads[s].priority;
      }
      auto better = [](const NodePlan& a, const NodePlan& b) {
        if (a.max_priority != b.max_priority) return a.max_priority < b.max_priority;
        if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
        if (a.sum_priority != b.sum_priority) return a.sum_priority < b.sum_priority;
        return a.node < b.node;
      };
      if (!best || better(plan, *best)) best = std::move(plan);
    }
    if (!best) {
      *why = "; not reclaiming: no node would have room for it even after the borrowing workloads of cohort " +
             *cohort + " exit (" + NoFitMessage(w) + ")";
      return false;
    }
    victims = std::move(best->victims);
    nominate = best->node;
  }
  std::sort(victims.begin(), victims.end(),
            [&](Slot a, Slot b) { return Value(workloads[a].id) < Value(workloads[b].id); });
  for (Slot s : victims) StopVictim(workloads[s], w, EventType::kReclaimed);
  w.waiting_for = victims;
  if (nominate) Nominate(w, *nominate);  // hold the room the victims leave on that node
  quota.Reserve(w);
  SetPending(w, EventType::kQuotaExceeded, reason::kReclaiming,
             "reclaiming lent quota: waiting for " + std::to_string(victims.size()) + " borrowing workload(s) to exit" +
                 (nominate ? " (nominated to " + nodes[*nominate].name + ")" : ""));
  return true;
}

}  // namespace arbiter::engine
