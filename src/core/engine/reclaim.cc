// ElasticQuota reclaim (Kueue's reclaimWithinCohort): a namespace within its guaranteed min
// takes lent quota back from the cohort's borrowers, by preemption.
#include <algorithm>
#include <climits>

#include "core/engine/lost_work.h"
#include "core/engine/reclaim_planner.h"
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

namespace {
// A single pod's reclaim: placeable means some node fits it (now, or once the victims exit); room
// is searched node by node; the combined plan is one priority preemption (TryPreempt's dry run).
class PodReclaim final : public ReclaimPlanner {
 public:
  PodReclaim(State& s, Workload& w) : ReclaimPlanner(s, w, {w.slot}, ""), w_(w) {}

 private:
  bool StepPlaceable(const std::vector<Slot>& gone, Plan* plan) override;
  bool StepRoom(const std::vector<bool>& attempts, Plan* plan) override;
  bool StepCombined(const std::vector<Slot>& gone, Plan* plan) override;
  std::string NoRoomSubject() const override { return "no node would have room for it"; }
  std::string NoRoomDetail() const override { return " (" + s_.NoFitMessage(w_) + ")"; }

  Workload& w_;
};

bool PodReclaim::StepPlaceable(const std::vector<Slot>& gone, Plan*) {
  for (uint32_t i = 0; i < s_.nodes.size(); ++i)
    if (s_.NodeSelectable(i, w_) && s_.FitsRespectingNominated(i, w_)) return true;
  for (uint32_t i = 0; i < s_.nodes.size(); ++i)
    if (s_.FitsOnceGone(i, w_, gone)) return true;
  return false;
}

// Per node, a minimal set that frees the quota and makes room there (victims beyond the quota's
// needs only from that node); the best by highest victim priority, then fewest victims, then
// priority sum, then (victimOrder LeastLostWork) the least work lost, then node order. The pod is
// nominated to its node.
bool PodReclaim::StepRoom(const std::vector<bool>& attempts, Plan* plan) {
  struct NodePlan {
    uint32_t node;
    std::vector<Slot> victims;
    int32_t max_priority;
    int64_t sum_priority;
    LostWork lost;  // under victimOrder LeastLostWork
  };
  auto better = [](const NodePlan& a, const NodePlan& b) {
    if (a.max_priority != b.max_priority) return a.max_priority < b.max_priority;
    if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
    if (a.sum_priority != b.sum_priority) return a.sum_priority < b.sum_priority;
    if (a.lost != b.lost) return a.lost < b.lost;  // zero unless LeastLostWork
    return a.node < b.node;
  };
  const bool lost_work = s_.policy.victim_order == VictimOrder::kLeastLostWork;
  std::optional<NodePlan> best;
  std::vector<Slot> here;
  for (uint32_t i = 0; i < s_.nodes.size(); ++i) {
    // A node without candidates cannot help: step 1 found the pod does not fit there once the
    // quota victims (none of them there) exit, and only victims there change that.
    if (CandidatesOn(i).empty()) continue;
    here.clear();
    for (uint32_t k : CandidatesOn(i)) here.push_back(c_.slots[k]);
    if (!s_.FitsOnceGone(i, w_, here)) continue;  // not even with every candidate here gone
    auto set = MinimalSet(attempts, Room{Room::Kind::kNode, i});
    if (!set) continue;
    NodePlan p{i, std::move(*set), INT32_MIN, 0, {}};
    for (Slot v : p.victims) {
      const Workload& victim = s_.workloads[v];
      p.max_priority = std::max(p.max_priority, victim.priority);
      p.sum_priority += victim.priority;
      if (lost_work) p.lost += LostWorkIfStopped(victim, s_.GraceOf(victim), s_.now);
    }
    if (!best || better(p, *best)) best = std::move(p);
  }
  if (!best) return false;
  plan->victims = std::move(best->victims);
  plan->at[0] = plan->picks_at = best->node;
  return true;
}

bool PodReclaim::StepCombined(const std::vector<Slot>& gone, Plan* plan) {
  PreemptDryRun room;
  if (!PlanRoomAfterQuotaVictims(s_, w_, gone, &room, &room_why_)) return false;
  plan->at[0] = room.pos;
  plan->for_room = {std::move(room)};
  return true;
}
}  // namespace

// Quota preemption (Kueue's classical preemption, quota_preemption.cc: candidates, their order,
// validity and the attempts) with Arbiter's placement dry run, by the planner of
// reclaim_planner.h. The pod must also be placeable once the victims exit:
//   1. the minimal quota-freeing set, if the pod then fits on some node (or fits already);
//   2. else, per node, a minimal set that frees the quota and makes room on that node
//      (PodReclaim::StepRoom); the pod is nominated to the best;
//   3. else the minimal quota-freeing set combined with priority preemption for room on one node
//      (Kubernetes' rules, PlanRoomAfterQuotaVictims): what Kueue's eviction followed by
//      kube-scheduler's preemption would do, but planned whole before anything is evicted;
//   4. else nothing is evicted, and `why` says so.
// Each step tries Kueue's attempts in order. Budgets (issue 27): a PodDisruptionBudget protects
// only pods within their namespace's own min, so reclaiming lent quota never depends on the
// borrower's goodwill: a victim of another namespace (taken only while that namespace is above its
// min) is never held back by its budgets, though it uses up their allowed disruptions. Under
// disruptionBudgets: Strict a withinNamespace candidate whose eviction would break a budget is
// skipped, and the reason names the budget when that leaves the quota unfreed (BestEffort ignores
// budgets, as Kueue does).
bool State::TryReclaim(Workload& w, const QuotaBook::ElasticResult& eq, std::string* why,
                       std::string* wait) {
  (void)eq;
  if (!w.bound_node().empty()) return false;  // it runs already (SubmitPod::node): evicts nobody
  return PodReclaim(*this, w).Run(why, wait);
}

}  // namespace arbiter::engine
