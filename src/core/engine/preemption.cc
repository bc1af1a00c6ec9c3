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
  PreemptPlan kube;            // under LeastLostWork: the node's plan in Kubernetes' order
};

// x.idx: the candidates x.cands (as indices) in importance order: priority (high first), then
// (`lost_work`: victimOrder LeastLostWork) the most work lost first, then start (earliest first),
// then submission.
void SortByImportance(const State& s, bool lost_work, PlanScratch& x) {
  const auto& workloads = s.workloads;
  const auto& cands = x.cands;
  auto& idx = x.idx;
  idx.resize(cands.size());
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = k;
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

// The node's filters that evicting cannot change: kube-scheduler's, the pod topology filters
// where evicting cannot help (a missing topology label, required pod affinity; anti-affinity and
// spread are checked with the victims gone), and the GPU model.
bool EvictingMayHelp(const State& s, uint32_t pos, const Workload& w, bool topology) {
  if (s.FilterNode(pos, w, nullptr, /*topology=*/false) != State::NodeFilter::kPass) return false;
  if (topology && State::Unresolvable(s.TopologyFilter(pos, w))) return false;
  return placement::ModelAccepts(s.nodes[pos].gpu_model, w.shape);
}

// x.cands: the node's workloads that `w` may preempt (those gone in `dry`'s plan already aside);
// `too_young_until` learns when the first one kept by minRuntime alone comes of age.
void CollectCandidates(const State& s, uint32_t pos, const Workload& w, const PreemptDryRun* dry,
                       PlanScratch& x, std::optional<Millis>* too_young_until) {
  const auto& workloads = s.workloads;
  const PoolPolicy& policy = s.policy;
  auto& cands = x.cands;
  cands.clear();
  for (Slot v : s.node_live[pos].workloads) {
    if (dry && (*dry->excluded)[v]) continue;  // gone in the plan already
    if (s.MayPreempt(w, workloads[v])) {
      cands.push_back(v);
    } else if (policy.min_runtime > 0 &&
               s.MayPreempt(w, workloads[v], /*ignore_min_runtime=*/true)) {
      Millis at = workloads[v].run_start + policy.min_runtime;
      *too_young_until = *too_young_until ? std::min(**too_young_until, at) : at;
    }
  }
}

// Kubernetes' filterPodsWithPDBViolation: walking x.idx in importance order, each pod covered by
// a PDB uses one of its allowed disruptions; the pods past the allowance are "violating" and go
// first in x.idx, to be reprieved first (a stable partition keeps the importance order within
// groups).
void ViolatingFirst(const State& s, const std::vector<State::PdbState>& pdb_state, PlanScratch& x) {
  auto& allowed = x.allowed;
  auto& violating = x.violating;
  allowed.assign(pdb_state.size(), 0);
  for (size_t k = 0; k < pdb_state.size(); ++k) allowed[k] = pdb_state[k].allowed;
  violating.assign(x.cands.size(), 0);
  for (size_t k : x.idx)
    for (uint32_t pdb : s.workloads[x.cands[k]].pdbs)
      if (--allowed[pdb] < 0) violating[k] = 1;
  std::stable_partition(x.idx.begin(), x.idx.end(), [&](size_t k) { return violating[k] != 0; });
}

// Adds the candidates back to x.sim (all given up) in x.idx order: each is kept (reprieved) if
// `w` still fits without it, and the topology filters still pass (x.removed: the candidates gone
// so far); the others are `plan`'s victims.
void ReprieveInOrder(const State& s, uint32_t pos, const Workload& w, bool topology, PlanScratch& x,
                     PreemptPlan* plan) {
  auto& sim = x.sim;
  auto& removed = x.removed;
  plan->node = pos;
  plan->victims.clear();
  plan->pdbs.clear();
  for (size_t k : x.idx) {
    const Slot c = x.cands[k];
    const Workload& v = s.workloads[c];
    sim.Take(v.shape, v.gpus);
    if (topology) {  // reprieved only if the topology filters still pass with it back
      removed.erase(std::find(removed.begin(), removed.end(), c));
      if (sim.Valid() && sim.Fits(w.shape) &&
          s.TopologyFilter(pos, w, &removed) == State::NodeFilter::kPass)
        continue;
      removed.push_back(c);
    } else if (sim.Valid() && sim.Fits(w.shape)) {
      continue;  // reprieved
    }
    sim.Give(v.shape, v.gpus);
    plan->victims.push_back(c);
  }
}

// x.sim: the node at `pos` with every candidate in x.cands gone, resources held for other
// nominated workloads of higher or equal priority still held (x.removed: the candidates, under the
// topology filters); false when `w` does not fit even so.
bool AllCandidatesGone(const State& s, uint32_t pos, const Workload& w, bool topology,
                       PlanScratch& x) {
  const auto& workloads = s.workloads;
  auto& sim = x.sim;
  sim.Reset(s.nodes[pos], &w.shape);
  for (Slot v : x.cands) sim.Give(workloads[v].shape, workloads[v].gpus);
  for (Slot v : s.node_live[pos].nominated) {
    const Workload& p = workloads[v];
    if (p.id == w.id || p.priority < w.priority || s.SameGang(p, w)) continue;
    if (sim.Fits(p.shape)) sim.Hold(p.shape);
  }
  if (!sim.Fits(w.shape)) return false;
  if (!topology) return true;
  x.removed.assign(x.cands.begin(), x.cands.end());
  return s.TopologyFilter(pos, w, &x.removed) == State::NodeFilter::kPass;
}

// The dry run of preempting for `w` on the node at `pos` (the node's reservations aside):
// kNone (no candidate victims, or `w` does not fit even without them), kBlocked (the plan
// violates a PodDisruptionBudget under the Strict mode: `plan` has it), or kViable (`plan`).
// `too_young_until` learns the earliest instant a victim younger than minRuntime comes of age.
NodeOutcome PlanOnNode(const State& s, uint32_t pos, const Workload& w, const PreemptDryRun* dry,
                       const std::vector<State::PdbState>& pdb_state, PlanScratch& x,
                       PreemptPlan* plan, std::optional<Millis>* too_young_until) {
  const bool topology = s.NeedsTopology(w);
  if (!EvictingMayHelp(s, pos, w, topology)) return NodeOutcome::kNone;
  CollectCandidates(s, pos, w, dry, x, too_young_until);
  const auto& cands = x.cands;
  if (cands.empty()) return NodeOutcome::kNone;
  if (!AllCandidatesGone(s, pos, w, topology, x)) return NodeOutcome::kNone;
  // Reprieve order: Kubernetes adds back PDB-violating victims first, then the others, each by
  // priority (high first) then start (earliest first); under victimOrder LeastLostWork the victims
  // that would lose the most work are reprieved first among equal priorities (lost_work.h). Each is
  // kept if the preemptor still fits without it. Under QoS, Slurm reprieves nothing: it removes
  // victims in its own order until the preemptor fits (qos_victims.h).
  if (s.policy.preemption_type == PreemptionType::kQoS) {
    plan->node = pos;
    plan->pdbs.clear();
    SlurmVictimsOnNode(s, w, cands, x.sim, x.idx, &plan->victims, &plan->qos_key);
    return FinishPlan(s, pdb_state, plan);
  }
  const bool lost_work = s.policy.victim_order == VictimOrder::kLeastLostWork;
  SortByImportance(s, lost_work, x);
  if (!s.pdbs.empty()) ViolatingFirst(s, pdb_state, x);
  ReprieveInOrder(s, pos, w, topology, x, plan);
  const NodeOutcome outcome = FinishPlan(s, pdb_state, plan);
  if (!lost_work) return outcome;
  // LeastLostWork: the node's plan in Kubernetes' order is a candidate too, and the better of the
  // two by the node choice's own rule (BetterPlan) is the node's plan. Reprieving the costliest
  // first can leave more (or higher-priority) victims than reprieving the earliest start first
  // (several small victims instead of one large); so a node never gives more victims, nor a
  // higher priority, than under Kubernetes' order, and of equal plans the least work lost.
  AllCandidatesGone(s, pos, w, topology, x);
  SortByImportance(s, /*lost_work=*/false, x);
  if (!s.pdbs.empty()) ViolatingFirst(s, pdb_state, x);
  ReprieveInOrder(s, pos, w, topology, x, &x.kube);
  const NodeOutcome kube = FinishPlan(s, pdb_state, &x.kube);
  const bool take_kube = outcome == NodeOutcome::kViable
                             ? kube == NodeOutcome::kViable && BetterPlan(x.kube, *plan, true)
                             : kube == NodeOutcome::kViable;
  if (!take_kube) return outcome;
  std::swap(*plan, x.kube);
  return kube;
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

// TryPreempt's search: the nodes from the rotating start, each answered by the plan cache
// (preempt_plan.h) or a dry run (PlanOnNode), until enough viable plans are seen; the best plan,
// or what held one back.
class PreemptSearch {
 public:
  PreemptSearch(State& s, const Workload& w, const PreemptDryRun* dry)
      : s_(s), w_(w), dry_(dry), qos_mode_(s.policy.preemption_type == PreemptionType::kQoS) {
    s.ComputePdbState(&pdb_state_);
    if (dry && dry->excluded && !s.pdbs.empty())
      ChargeExcludedToBudgets(s, *dry->excluded, pdb_state_);
    cache_ = CacheFor();
  }

  // The scan; it moves the rotating start past the nodes it read.
  void Run() {
    const size_t n = s_.nodes.size();
    const size_t want = s_.NumPreemptionCandidates();
    size_t viable = 0, processed = 0;
    const size_t start = n ? s_.next_preempt_node % n : 0;
    for (; processed < n && viable < want; ++processed) {
      size_t i = start + processed;
      if (i >= n) i -= n;
      if (const PreemptPlan* plan = PlanAt(static_cast<uint32_t>(i))) {
        any_candidate_node_ = true;
        ++viable;  // only plans that may be chosen count towards the candidate budget
        Offer(plan);
      }
    }
    if (n) s_.next_preempt_node = (start + processed) % n;
  }

  std::optional<PreemptPlan> TakeBest() {
    if (best_at_ == &best_computed_) return std::move(best_computed_);
    if (best_at_) return *best_at_;
    return std::nullopt;
  }

  // Why no plan was found (TakeBest gave none); asks for a wake-up when a candidate comes of age.
  PreemptionBlocked Blocked() {
    PreemptionBlocked blocked;
    if (too_young_until_) {
      s_.wakeups.push(*too_young_until_);
      blocked.kind = PreemptionBlocked::Kind::kTooYoung;
      blocked.min_runtime = s_.policy.min_runtime;
      blocked.until = *too_young_until_;
    }
    if (!blocking_pdbs_.empty()) {
      blocked.kind = PreemptionBlocked::Kind::kBudgets;
      blocked.budgets.assign(blocking_pdbs_.begin(), blocking_pdbs_.end());
    } else if (!any_candidate_node_ && !too_young_until_) {
      blocked.kind =
          qos_mode_ ? PreemptionBlocked::Kind::kNoQoSVictims : PreemptionBlocked::Kind::kNoVictims;
    }
    return blocked;
  }

 private:
  // The plan cache of `w`'s class; a gang's dry run uses it on the nodes it has not changed.
  // Not for a workload tried on a flavor: its nodes depend on the flavor, not on its class.
  // Nor under victimOrder LeastLostWork: lost work depends on now.
  PlanCache* CacheFor() {
    const PoolPolicy& policy = s_.policy;
    const bool cache_on = s_.pdbs.empty() && policy.min_runtime == 0 &&
                          w_.nominated_node == kNoNode &&
                          policy.victim_order != VictimOrder::kLeastLostWork &&
                          (!dry_ || dry_->touched != nullptr) && w_.rare().flavor_labels.empty() &&
                          !s_.NeedsTopology(w_);  // pod topology depends on other nodes too
    if (!cache_on) return nullptr;
    PlanCache* cache = &s_.preempt_memo[s_.PlanClass(w_)];
    const size_t n = s_.nodes.size();
    if (cache->global != s_.global_epoch || cache->node.size() != n) {
      cache->global = s_.global_epoch;
      cache->node.assign(n, 0);
      cache->plans.clear();
    }
    return cache;
  }

  // The node's cache entries may be used: not changed by the dry run, and no member of `w`'s
  // pod group nominated there.
  bool Clean(uint32_t pos) const {
    bool clean = cache_ != nullptr && (!dry_ || !(*dry_->touched)[pos]);
    if (clean && w_.gang != kNoGang)
      for (Slot s : s_.node_live[pos].nominated) clean = clean && !s_.SameGang(s_.workloads[s], w_);
    return clean;
  }

  // The viable plan on the node at `pos` (null: none, or blocked by budgets), from the cache
  // when it may be used.
  const PreemptPlan* PlanAt(uint32_t pos) {
    const NodeLive& info = s_.node_live[pos];
    // Priority preemption: nothing on the node has a lower priority, so no candidate victim
    // (PlanOnNode's outcome kNone, without reading the workloads).
    if (!qos_mode_ && info.min_priority >= w_.priority) return nullptr;
    const bool clean = Clean(pos);
    const uint64_t epoch1 = info.epoch + 1;
    if (clean && cache_->node[pos] == epoch1) {  // nothing changed here since: no plan
      if (verify_)
        ARB_CHECK_MSG(Fresh(pos) == NodeOutcome::kNone, "preemption cache: no plan cached for " +
                                                            w_.key + " on " + s_.nodes[pos].name +
                                                            ", one found");
      return nullptr;
    }
    // Backfill: room promised to another (reservations change every cycle: not cached).
    if (s_.Reserved(pos) && !s_.HoldsReservation(pos, w_)) return nullptr;
    if (clean)
      if (auto c = cache_->plans.find(pos);
          c != cache_->plans.end() && c->second.epoch1 == epoch1) {
        if (verify_)
          ARB_CHECK_MSG(Fresh(pos) == NodeOutcome::kViable && fresh_ == c->second.plan,
                        "preemption cache: the plan cached for " + w_.key + " on " +
                            s_.nodes[pos].name + " is stale");
        return &c->second.plan;
      }
    return ComputePlan(pos, clean, epoch1);
  }

  // The dry run on the node, its outcome kept in the cache when `clean`.
  const PreemptPlan* ComputePlan(uint32_t pos, bool clean, uint64_t epoch1) {
    const NodeOutcome outcome =
        PlanOnNode(s_, pos, w_, dry_, pdb_state_, scratch_, &computed_, &too_young_until_);
    if (outcome == NodeOutcome::kNone) {
      if (clean) cache_->node[pos] = epoch1;
      return nullptr;
    }
    any_candidate_node_ = true;
    if (outcome == NodeOutcome::kBlocked) {
      for (const auto& nm : computed_.pdbs) blocking_pdbs_.insert(nm);
      return nullptr;
    }
    if (!clean) return &computed_;
    cache_->node[pos] = 0;
    auto& entry = cache_->plans[pos];
    entry.epoch1 = epoch1;
    entry.plan = computed_;
    return &entry.plan;
  }

  // A fresh computation to check a cache answer against (options.check_invariants).
  NodeOutcome Fresh(uint32_t pos) {
    std::optional<Millis> ignored;
    return PlanOnNode(s_, pos, w_, dry_, pdb_state_, check_scratch_, &fresh_, &ignored);
  }

  // The best plan so far: a cache entry (stable while this search runs) or the kept copy of a
  // computed one (swapped out of `computed_`, not copied).
  void Offer(const PreemptPlan* plan) {
    const bool lost_work = s_.policy.victim_order == VictimOrder::kLeastLostWork;
    if (best_at_ &&
        !(qos_mode_ ? BetterQoSPlan(*plan, *best_at_) : BetterPlan(*plan, *best_at_, lost_work)))
      return;
    if (plan == &computed_) {
      std::swap(best_computed_, computed_);
      best_at_ = &best_computed_;
    } else {
      best_at_ = plan;
    }
  }

  State& s_;
  const Workload& w_;
  const PreemptDryRun* dry_;
  const bool qos_mode_;
  const bool verify_ = s_.options.check_invariants;  // every cache answer against a fresh one
  std::vector<State::PdbState> pdb_state_;
  PlanCache* cache_ = nullptr;
  PlanScratch scratch_, check_scratch_;
  PreemptPlan computed_, fresh_;
  const PreemptPlan* best_at_ = nullptr;
  PreemptPlan best_computed_;
  std::set<std::string> blocking_pdbs_;
  bool any_candidate_node_ = false;
  std::optional<Millis> too_young_until_;  // earliest instant a young workload is a candidate
};

// Victims get SIGTERM now; the preemptor is nominated to the node.
void ExecutePreemption(State& s, Workload& w, const PreemptPlan& best) {
  const std::string& node_name = s.nodes[best.node].name;
  std::string list;
  for (Slot v : best.victims) list += (list.empty() ? "" : ", ") + s.workloads[v].key;
  s.Emit(EventType::kPreempting, w, node_name, reason::kPreempting,
         "preempting " + list + " on " + node_name +
             (best.pdb_violations
                  ? " (violates " + std::to_string(best.pdb_violations) + " disruption budget(s))"
                  : ""));
  for (Slot v : best.victims) s.StopVictim(s.workloads[v], w, EventType::kPreempted);
  s.Nominate(w, best.node);
  w.waiting_for = best.victims;
  // Hold the preemptor's ElasticQuota share while its victims exit, so that nobody borrows it
  // meanwhile and the preemption is not wasted (or repeated).
  s.quota.Reserve(w);
  s.SetPending(w, EventType::kFailedScheduling, reason::kWaitingForVictims,
               "nominated to " + node_name + ", waiting for " +
                   std::to_string(best.victims.size()) + " victim(s) to exit");
}

}  // namespace

// `dry` (a gang's plan): find the plan, execute nothing.
bool State::TryPreempt(Workload& w, std::string* why, PreemptDryRun* dry) {
  if (w.preemption_policy == PreemptionPolicy::kNever || !w.bound_node().empty()) {
    PreemptionBlocked blocked;
    blocked.kind = w.bound_node().empty() ? PreemptionBlocked::Kind::kPolicyNever
                                          : PreemptionBlocked::Kind::kBound;
    *why = Render(blocked);
    return false;
  }
  PreemptSearch search(*this, w, dry);
  search.Run();
  std::optional<PreemptPlan> best = search.TakeBest();
  if (!best) {
    *why = Render(search.Blocked());
    return false;
  }
  if (dry) {
    dry->pos = best->node;
    dry->victims = best->victims;
    return true;
  }
  ExecutePreemption(*this, w, *best);
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
