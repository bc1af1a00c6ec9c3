// Preemption (kube-scheduler's PostFilter, DefaultPreemption; Slurm's QoS preemption): who may be
// a victim, the dry run per candidate node, victim order (reprieve), PDB-aware plan choice, and
// stopping the victims (SIGTERM with their grace period).
#include <algorithm>
#include <climits>
#include <set>

#include "core/engine/qos_victims.h"
#include "core/engine/reasons.h"
#include "core/engine/state.h"

namespace arbiter::engine {

// kube-scheduler's DefaultPreemption dry-runs candidates until it has max(10% of the nodes, 100).
size_t State::NumPreemptionCandidates() const { return std::max<size_t>(100, nodes.size() / 10); }

// Rule: a victim must have strictly lower priority (Priority) or a QoS in the preemptor's preempt
// list (QoS); must have run at least minRuntime; and when it belongs to another namespace that has
// an ElasticQuota it must run on borrowed quota (guaranteed quota is protected).
bool State::MayPreempt(const Workload& p, const Workload& v, bool ignore_min_runtime) const {
  if (v.phase != Phase::kRunning) return false;
  if (policy.preemption_type == PreemptionType::kQoS) {
    if (p.qos < 0 || v.qos < 0 || !QoSOf(p.qos)) return false;
    const auto& list = qos_preempt[static_cast<size_t>(p.qos)];
    if (std::find(list.begin(), list.end(), v.qos) == list.end()) return false;
  } else if (v.priority >= p.priority) {
    return false;
  }
  if (!ignore_min_runtime && now - v.run_start < policy.min_runtime) return false;
  if (v.elastic && !v.borrowed && v.namespace_id != p.namespace_id) return false;
  return true;
}

uint32_t State::PlanClass(const Workload& w) {
  auto it = plan_class_of.find(w.preempt_class);
  if (it != plan_class_of.end()) return it->second;
  // The preemption class's key (lifecycle.cc) without the pod group: a plan does not depend on it
  // except through members of the group nominated on the node, which the cache leaves out.
  std::string k = ShapeKey(w) + "|" + w.namespace_ + "|" +
                  (w.qos >= 0 ? qos_names[static_cast<size_t>(w.qos)] : "") + "|" +
                  ToString(w.preemption_policy);
  auto [id, inserted] =
      plan_class_ids.emplace(std::move(k), static_cast<uint32_t>(plan_class_ids.size()));
  plan_class_of.emplace(w.preempt_class, id->second);
  return id->second;
}

namespace {

enum class NodeOutcome { kNone, kBlocked, kViable };

// Reused across the nodes of one scan (allocates nothing once warm).
struct PlanScratch {
  placement::FitView sim;
  std::vector<Slot> cands;
  std::vector<size_t> idx;
  std::vector<char> violating;
  std::vector<int64_t> allowed;
  std::vector<Slot> removed;
  std::vector<LostWork> lost;  // by candidate, under victimOrder LeastLostWork
};

// x.idx: the candidates x.cands (as indices) in importance order: priority (high first), then
// (victimOrder LeastLostWork) the most work lost first, then start (earliest first), then
// submission.
void SortByImportance(const State& s, PlanScratch& x) {
  const auto& workloads = s.workloads;
  const auto& cands = x.cands;
  auto& idx = x.idx;
  idx.resize(cands.size());
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = k;
  const bool lost_work = s.policy.victim_order == VictimOrder::kLeastLostWork;
  if (lost_work) {
    x.lost.resize(cands.size());
    for (size_t k = 0; k < cands.size(); ++k)
      x.lost[k] = LostWorkIfStopped(workloads[cands[k]], s.GraceOf(workloads[cands[k]]), s.now);
  }
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    const Workload &p = workloads[cands[a]], &q = workloads[cands[b]];
    if (p.priority != q.priority) return p.priority > q.priority;
    if (lost_work && x.lost[a] != x.lost[b]) return x.lost[b] < x.lost[a];
    if (p.run_start != q.run_start) return p.run_start < q.run_start;
    return Value(p.id) < Value(q.id);  // submission order: unique and deterministic
  });
}

// A node's plan, its victims chosen: victims in id order, its budget violations (kBlocked when
// they count under the Strict mode) and the figures the plan choice compares.
NodeOutcome FinishPlan(const State& s, const std::vector<State::PdbState>& pdb_state,
                       PreemptPlan* plan) {
  const auto& workloads = s.workloads;
  std::sort(plan->victims.begin(), plan->victims.end(),
            [&](Slot a, Slot b) { return Value(workloads[a].id) < Value(workloads[b].id); });
  plan->pdb_violations = s.CountViolations(plan->victims, pdb_state, &plan->pdbs);
  if (plan->pdb_violations > 0 && s.policy.disruption_budgets == DisruptionBudgetMode::kStrict)
    return NodeOutcome::kBlocked;
  plan->max_priority = INT32_MIN;
  plan->sum_priority = 0;
  plan->earliest_start_of_max = 0;
  plan->lost = LostWork{};
  const bool lost_work = s.policy.victim_order == VictimOrder::kLeastLostWork;
  for (Slot v : plan->victims) {
    const Workload& p = workloads[v];
    if (lost_work) plan->lost += LostWorkIfStopped(p, s.GraceOf(p), s.now);
    // Kubernetes adds 2^31 per victim so that negative priorities do not favour more victims.
    plan->sum_priority += int64_t{p.priority} + (int64_t{1} << 31);
    if (p.priority > plan->max_priority) {
      plan->max_priority = p.priority;
      plan->earliest_start_of_max = p.run_start;
    } else if (p.priority == plan->max_priority) {
      plan->earliest_start_of_max = std::min(plan->earliest_start_of_max, p.run_start);
    }
  }
  return NodeOutcome::kViable;
}

// The dry run of preempting for `w` on the node at `pos` (the node's reservations aside):
// kNone (no candidate victims, or `w` does not fit even without them), kBlocked (the plan
// violates a PodDisruptionBudget under the Strict mode: `plan` has it), or kViable (`plan`).
// `too_young_until` learns the earliest instant a victim younger than minRuntime comes of age.
NodeOutcome PlanOnNode(const State& s, uint32_t pos, const Workload& w, const PreemptDryRun* dry,
                       const std::vector<State::PdbState>& pdb_state, PlanScratch& x,
                       PreemptPlan* plan, std::optional<Millis>* too_young_until) {
  if (s.FilterNode(pos, w, nullptr, /*topology=*/false) != State::NodeFilter::kPass)
    return NodeOutcome::kNone;
  // Pod topology: a node where evicting cannot help (a missing topology label, required pod
  // affinity) is no candidate; anti-affinity and spread are checked with the victims gone.
  const bool topology = s.NeedsTopology(w);
  if (topology && State::Unresolvable(s.TopologyFilter(pos, w))) return NodeOutcome::kNone;
  if (!placement::ModelAccepts(s.nodes[pos].gpu_model, w.shape)) return NodeOutcome::kNone;
  const NodeLive& info = s.node_live[pos];
  const auto& workloads = s.workloads;
  const PoolPolicy& policy = s.policy;
  const bool qos_mode = policy.preemption_type == PreemptionType::kQoS;
  auto& cands = x.cands;
  cands.clear();
  for (Slot v : info.workloads) {
    if (dry && (*dry->excluded)[v]) continue;  // gone in the plan already
    if (s.MayPreempt(w, workloads[v])) {
      cands.push_back(v);
    } else if (policy.min_runtime > 0 &&
               s.MayPreempt(w, workloads[v], /*ignore_min_runtime=*/true)) {
      Millis at = workloads[v].run_start + policy.min_runtime;
      *too_young_until = *too_young_until ? std::min(**too_young_until, at) : at;
    }
  }
  if (cands.empty()) return NodeOutcome::kNone;
  auto& sim = x.sim;
  sim.Reset(s.nodes[pos], &w.shape);
  for (Slot v : cands) sim.Give(workloads[v].shape, workloads[v].gpus);
  // Resources held for other nominated workloads of higher or equal priority stay held.
  for (Slot v : info.nominated) {
    const Workload& p = workloads[v];
    if (p.id == w.id || p.priority < w.priority || s.SameGang(p, w)) continue;
    if (sim.Fits(p.shape)) sim.Hold(p.shape);
  }
  if (!sim.Fits(w.shape)) return NodeOutcome::kNone;
  auto& removed = x.removed;  // the candidates gone in the plan so far (topology only)
  if (topology) {
    removed.assign(cands.begin(), cands.end());
    if (s.TopologyFilter(pos, w, &removed) != State::NodeFilter::kPass) return NodeOutcome::kNone;
  }
  // Reprieve order: Kubernetes adds back PDB-violating victims first, then the others, each by
  // priority (high first) then start (earliest first); under victimOrder LeastLostWork the victims
  // that would lose the most work are reprieved first among equal priorities (lost_work.h). Each is
  // kept if the preemptor still fits without it. Under QoS, Slurm reprieves nothing: it removes
  // victims in its own order until the preemptor fits (qos_victims.h).
  if (qos_mode) {
    plan->node = pos;
    plan->pdbs.clear();
    SlurmVictimsOnNode(s, w, cands, sim, x.idx, &plan->victims, &plan->qos_key);
    return FinishPlan(s, pdb_state, plan);
  }
  auto& idx = x.idx;
  SortByImportance(s, x);
  if (!s.pdbs.empty()) {
    // Kubernetes' filterPodsWithPDBViolation: walking in importance order, each pod covered by
    // a PDB uses one of its allowed disruptions; the pods past the allowance are "violating"
    // and are reprieved first (a stable partition keeps the importance order within groups).
    auto& allowed = x.allowed;
    auto& violating = x.violating;
    allowed.assign(pdb_state.size(), 0);
    for (size_t k = 0; k < pdb_state.size(); ++k) allowed[k] = pdb_state[k].allowed;
    violating.assign(cands.size(), 0);
    for (size_t k : idx)
      for (uint32_t pdb : workloads[cands[k]].pdbs)
        if (--allowed[pdb] < 0) violating[k] = 1;
    std::stable_partition(idx.begin(), idx.end(), [&](size_t k) { return violating[k] != 0; });
  }
  plan->node = pos;
  plan->victims.clear();
  plan->pdbs.clear();
  for (size_t k : idx) {
    const Workload& v = workloads[cands[k]];
    sim.Take(v.shape, v.gpus);
    if (topology) {  // reprieved only if the topology filters still pass with it back
      removed.erase(std::find(removed.begin(), removed.end(), cands[k]));
      if (sim.Valid() && sim.Fits(w.shape) &&
          s.TopologyFilter(pos, w, &removed) == State::NodeFilter::kPass)
        continue;
      removed.push_back(cands[k]);
    } else if (sim.Valid() && sim.Fits(w.shape)) {
      continue;  // reprieved
    }
    sim.Give(v.shape, v.gpus);
    plan->victims.push_back(cands[k]);
  }
  return FinishPlan(s, pdb_state, plan);
}

// A dry run's plan so far (`excluded`: quota victims, earlier members' victims) has used its
// victims' budgets: each takes one allowed disruption (never below zero) before this plan is
// chosen, as the budgets' status would show once those victims are evicted.
void ChargeExcludedToBudgets(const State& st, const std::vector<char>& excluded,
                             std::vector<State::PdbState>& pdb_state) {
  for (Slot s : st.pdb_members) {
    if (s >= excluded.size() || !excluded[s]) continue;
    for (uint32_t k : st.workloads[s].pdbs)
      pdb_state[k].allowed = std::max<int64_t>(0, pdb_state[k].allowed - 1);
  }
}

}  // namespace

// `dry` (a gang's plan): find the plan, execute nothing.
bool State::TryPreempt(Workload& w, std::string* why, PreemptDryRun* dry) {
  PreemptionBlocked blocked;
  if (w.preemption_policy == PreemptionPolicy::kNever) {
    blocked.kind = PreemptionBlocked::Kind::kPolicyNever;
    *why = Render(blocked);
    return false;
  }
  const bool qos_mode = policy.preemption_type == PreemptionType::kQoS;
  const bool lost_work = policy.victim_order == VictimOrder::kLeastLostWork;
  // The best plan so far: a cache entry (stable while this search runs) or the kept copy of a
  // computed one (swapped out of `computed`, not copied).
  const PreemptPlan* best_at = nullptr;
  PreemptPlan best_computed;
  std::set<std::string> blocking_pdbs;
  bool any_candidate_node = false;
  std::optional<Millis> too_young_until;  // earliest instant a young workload becomes a candidate
  std::vector<PdbState> pdb_state;
  ComputePdbState(&pdb_state);
  if (dry && dry->excluded && !pdbs.empty())
    ChargeExcludedToBudgets(*this, *dry->excluded, pdb_state);
  const size_t n = nodes.size();
  const size_t want = NumPreemptionCandidates();
  size_t viable = 0, processed = 0;
  const size_t start = n ? next_preempt_node % n : 0;
  // The plan cache (preempt_plan.h); a gang's dry run uses it on the nodes it has not changed.
  // Not for a workload tried on a flavor: its nodes depend on the flavor, not on its class.
  // Nor under victimOrder LeastLostWork: lost work depends on now.
  const bool cache_on = pdbs.empty() && policy.min_runtime == 0 && w.nominated_node == kNoNode &&
                        policy.victim_order != VictimOrder::kLeastLostWork &&
                        (!dry || dry->touched != nullptr) && w.flavor_labels.empty() &&
                        !NeedsTopology(w);  // pod topology depends on other nodes too
  PlanCache* cache = nullptr;
  if (cache_on) {
    cache = &preempt_memo[PlanClass(w)];
    if (cache->global != global_epoch || cache->node.size() != n) {
      cache->global = global_epoch;
      cache->node.assign(n, 0);
      cache->plans.clear();
    }
  }
  const bool verify = options.check_invariants;  // every cache answer against a fresh computation
  PlanScratch scratch, check_scratch;
  PreemptPlan computed, fresh;
  std::optional<Millis> ignored;
  for (; processed < n && viable < want; ++processed) {
    size_t i = start + processed;
    if (i >= n) i -= n;
    const uint32_t pos = static_cast<uint32_t>(i);
    const NodeLive& info = node_live[pos];
    // Priority preemption: nothing on the node has a lower priority, so no candidate victim
    // (PlanOnNode's outcome kNone, without reading the workloads).
    if (!qos_mode && info.min_priority >= w.priority) continue;
    bool clean = cache != nullptr && (!dry || !(*dry->touched)[i]);
    if (clean && w.gang != kNoGang)
      for (Slot s : info.nominated) clean = clean && !SameGang(workloads[s], w);
    const uint64_t epoch1 = info.epoch + 1;
    if (clean && cache->node[i] == epoch1) {  // nothing changed here since: no plan
      if (verify)
        ARB_CHECK_MSG(PlanOnNode(*this, pos, w, dry, pdb_state, check_scratch, &fresh, &ignored) ==
                          NodeOutcome::kNone,
                      "preemption cache: no plan cached for " + w.key + " on " + nodes[pos].name +
                          ", one found");
      continue;
    }
    // Backfill: room promised to another (reservations change every cycle: not cached).
    if (Reserved(pos) && !HoldsReservation(pos, w)) continue;
    const PreemptPlan* plan = nullptr;
    if (clean)
      if (auto c = cache->plans.find(pos); c != cache->plans.end() && c->second.epoch1 == epoch1) {
        plan = &c->second.plan;
        if (verify)
          ARB_CHECK_MSG(PlanOnNode(*this, pos, w, dry, pdb_state, check_scratch, &fresh,
                                   &ignored) == NodeOutcome::kViable &&
                            fresh == *plan,
                        "preemption cache: the plan cached for " + w.key + " on " +
                            nodes[pos].name + " is stale");
      }
    if (!plan) {
      const NodeOutcome outcome =
          PlanOnNode(*this, pos, w, dry, pdb_state, scratch, &computed, &too_young_until);
      if (outcome == NodeOutcome::kNone) {
        if (clean) cache->node[i] = epoch1;
        continue;
      }
      any_candidate_node = true;
      if (outcome == NodeOutcome::kBlocked) {
        for (const auto& nm : computed.pdbs) blocking_pdbs.insert(nm);
        continue;
      }
      if (clean) {
        cache->node[i] = 0;
        auto& entry = cache->plans[pos];
        entry.epoch1 = epoch1;
        entry.plan = computed;
        plan = &entry.plan;
      } else {
        plan = &computed;
      }
    }
    any_candidate_node = true;
    ++viable;  // only plans that may be chosen count towards the candidate budget
    if (!best_at ||
        (qos_mode ? BetterQoSPlan(*plan, *best_at) : BetterPlan(*plan, *best_at, lost_work))) {
      if (plan == &computed) {
        std::swap(best_computed, computed);
        best_at = &best_computed;
      } else {
        best_at = plan;
      }
    }
  }
  if (n) next_preempt_node = (start + processed) % n;
  std::optional<PreemptPlan> best;
  if (best_at == &best_computed)
    best = std::move(best_computed);
  else if (best_at)
    best = *best_at;
  if (!best) {
    if (too_young_until) {
      wakeups.push(*too_young_until);
      blocked.kind = PreemptionBlocked::Kind::kTooYoung;
      blocked.min_runtime = policy.min_runtime;
      blocked.until = *too_young_until;
    }
    if (!blocking_pdbs.empty()) {
      blocked.kind = PreemptionBlocked::Kind::kBudgets;
      blocked.budgets.assign(blocking_pdbs.begin(), blocking_pdbs.end());
    } else if (!any_candidate_node && !too_young_until) {
      blocked.kind =
          qos_mode ? PreemptionBlocked::Kind::kNoQoSVictims : PreemptionBlocked::Kind::kNoVictims;
    }
    *why = Render(blocked);
    return false;
  }
  if (dry) {
    dry->pos = best->node;
    dry->victims = best->victims;
    return true;
  }
  // Execute: victims get SIGTERM now; the preemptor is nominated to the node.
  const std::string& node_name = nodes[best->node].name;
  std::string list;
  for (Slot s : best->victims) list += (list.empty() ? "" : ", ") + workloads[s].key;
  Emit(EventType::kPreempting, w, node_name, reason::kPreempting,
       "preempting " + list + " on " + node_name +
           (best->pdb_violations
                ? " (violates " + std::to_string(best->pdb_violations) + " disruption budget(s))"
                : ""));
  for (Slot s : best->victims) StopVictim(workloads[s], w, EventType::kPreempted);
  Nominate(w, best->node);
  w.waiting_for = best->victims;
  // Hold the preemptor's ElasticQuota share while its victims exit, so that nobody borrows it
  // meanwhile and the preemption is not wasted (or repeated).
  quota.Reserve(w);
  SetPending(w, EventType::kFailedScheduling, reason::kWaitingForVictims,
             "nominated to " + node_name + ", waiting for " + std::to_string(best->victims.size()) +
                 " victim(s) to exit");
  return true;
}

// SIGTERM to a victim. What happens next (when it exits, what it saves) is the driver's work
// model: the event carries the grace period, and the driver reports VictimExited.
void State::StopVictim(Workload& v, const Workload& p, EventType kind,
                       const std::string* why_text) {
  if (v.phase == Phase::kTerminating) {  // stopped already with its pod group: this one waits too
    if (v.preemptor == kNoSlot) v.preemptor = p.slot;
    return;
  }
  const Millis grace = GraceOf(v);
  Signal(v, grace);
  v.preempted_by = p.key;
  v.preemptor = p.slot;
  v.preemptions++;
  std::string msg = why_text                        ? *why_text
                    : kind == EventType::kReclaimed ? "reclaimed by " + p.key + " (quota lent by " +
                                                          p.namespace_ + " is needed back)"
                                                    : "preempted by " + p.key;
  msg += "; SIGTERM, grace " + FormatDuration(grace);
  const std::string_view why =
      kind == EventType::kReclaimed ? reason::kReclaimed : reason::kPreempted;
  SetMessage(v, msg, why, WorkFacts::kStopPlan);
  Emit(kind, v, node_info[v.node].name, why, msg, p.key, WorkFacts::kStopPlan, grace);
  if (v.gang != kNoGang) StopGang(v, p.key);
}

}  // namespace arbiter::engine
