// Kubernetes' taint eviction controller (the NoExecute taint manager): a pod on a node with a
// NoExecute taint it does not tolerate is evicted at once; one that tolerates every NoExecute
// taint of its node stays for the smallest tolerationSeconds of the tolerations that tolerate
// them (for each taint the first toleration that tolerates it, as GetMatchingTolerations picks),
// forever when none sets it. The time runs from when the taint appeared or the pod was bound;
// an eviction already scheduled is not moved, and it is cancelled when the taints no longer ask
// for it. Kubernetes deletes the evicted pod (its controller makes a new one): here it gets
// SIGTERM with its grace period and meets its preemption fate (Requeue or Cancel), stopped by
// "node/NAME" as a removed node's workloads are.
#include <algorithm>
#include <optional>

#include "core/engine/reasons.h"
#include "core/engine/state.h"
#include "core/instant_text.h"
#include "core/placement/node_constraints.h"

namespace arbiter::engine {

namespace {

struct NoExecuteVerdict {
  bool any = false;                    // the node has a NoExecute taint
  const Taint* untolerated = nullptr;  // the first one not tolerated: evict now
  std::optional<Millis> delay;         // all tolerated: how long it may stay (none: forever)
};

NoExecuteVerdict Judge(const std::vector<Taint>& taints,
                       const std::vector<Toleration>& tolerations) {
  NoExecuteVerdict v;
  for (const Taint& taint : taints) {
    if (taint.effect != TaintEffect::kNoExecute) continue;
    v.any = true;
    auto t = std::find_if(tolerations.begin(), tolerations.end(),
                          [&](const Toleration& x) { return placement::ToleratesTaint(x, taint); });
    if (t == tolerations.end()) {
      v.untolerated = &taint;
      return v;
    }
    if (t->toleration_seconds) {
      const Millis s = std::max<Millis>(0, *t->toleration_seconds);
      v.delay = v.delay ? std::min(*v.delay, s) : s;
    }
  }
  return v;
}

}  // namespace

void State::ScheduleTaintEviction(Workload& w, uint32_t pos) {
  if (w.phase != Phase::kRunning) return;
  const Node& spec = SpecAt(pos);
  const NoExecuteVerdict v = Judge(spec.taints, w.rare().tolerations);
  if (v.untolerated) {
    EvictForTaint(w, spec.meta.name,
                  "evicted: node " + spec.meta.name + " has taint " +
                      placement::TaintText(*v.untolerated) +
                      ":NoExecute, which it does not tolerate");
    return;
  }
  if (!v.any || !v.delay) {  // no NoExecute taint left, or tolerated for good
    w.taint_evict_at = -1;
    return;
  }
  if (w.taint_evict_at >= 0) return;  // scheduled already: not moved
  w.taint_evict_at = now + *v.delay;
  taint_timed.push_back(w.slot);
  wakeups.push(w.taint_evict_at);
}

void State::NoExecuteTaintsChanged(uint32_t pos) {
  const std::vector<Slot> on = node_live[pos].workloads;  // evictions change the list
  for (Slot s : on) ScheduleTaintEviction(workloads[s], pos);
}

void State::EvictTaintedDue() {
  if (taint_timed.empty()) return;
  std::vector<Slot> due;
  std::vector<Slot> keep;
  for (Slot s : taint_timed) {
    const Workload& w = workloads[s];
    if (w.taint_evict_at < 0 || w.phase != Phase::kRunning) continue;  // cancelled or gone
    (w.taint_evict_at <= now ? due : keep).push_back(s);
  }
  taint_timed = std::move(keep);
  std::sort(due.begin(), due.end(),
            [&](Slot a, Slot b) { return Value(workloads[a].id) < Value(workloads[b].id); });
  due.erase(std::unique(due.begin(), due.end()), due.end());
  for (Slot s : due) {
    Workload& w = workloads[s];
    if (w.phase != Phase::kRunning) continue;  // stopped with its pod group meanwhile
    const std::string node = node_info[w.node].name;
    EvictForTaint(
        w, node,
        "evicted: its tolerationSeconds for the NoExecute taints of node " + node + " have passed");
  }
}

void State::EvictForTaint(Workload& w, const std::string& node, const std::string& why) {
  w.taint_evict_at = -1;
  if (w.phase != Phase::kRunning) return;
  const Millis grace = GraceOf(w);
  Signal(w, grace);
  w.preempted_by = "node/" + node;
  w.preemptor = kNoSlot;
  w.preemptions++;
  const std::string msg = why + "; SIGTERM, grace " + FormatDuration(grace);
  SetMessage(w, msg, reason::kTaintEviction, WorkFacts::kStopPlan);
  Emit(EventType::kPreempted, w, node, reason::kTaintEviction, msg, "node/" + node,
       WorkFacts::kStopPlan, grace);
  if (w.gang != kNoGang) StopGang(w, "node/" + node);
}

}  // namespace arbiter::engine
