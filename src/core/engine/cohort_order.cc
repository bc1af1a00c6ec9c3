// Order within an instant among namespaces of a cohort (Kueue's scheduler: entries that do not
// borrow before entries that borrow; with fair sharing, borrowers by lowest weighted share).
#include <algorithm>

#include "core/engine/state.h"

namespace arbiter::engine {

void State::CycleNominalFirst() {
  if (!quota.AnyCohort()) {  // nobody can borrow: one pass
    RunCycle();
    return;
  }
  defer_borrowers = true;
  deferred.clear();
  RunCycle();
  defer_borrowers = false;
  if (!deferred.empty()) AdmitDeferredBorrowers();
}

// Kueue's CanAlwaysReclaim is reclaimWithinCohort: Any: then nothing is held.
void State::HoldUnreclaimable(Workload& w, const QuotaBook::ElasticResult& eq) {
  if (w.immediate || !eq.within_min || eq.over_max || quota.Holds(w)) return;
  const ElasticQuota* q = quota.ElasticOf(w.namespace_);
  if (!q || q->cohort.empty() || QuotaPolicyOf(*q).reclaim == ReclaimMode::kAny) return;
  quota.Reserve(w);
  w.unreclaimable_hold = true;
  cycle_holds.push_back(w.slot);
}

void State::DropUnreclaimableHolds() {
  for (Slot s : cycle_holds) {
    Workload& w = workloads[s];
    if (!w.unreclaimable_hold) continue;  // admitted, rejected or deleted since (slot reused)
    w.unreclaimable_hold = false;
    // A preemption it started since keeps the hold for its victims' exit.
    if (w.phase == Phase::kPending && w.waiting_for.empty() && w.nominated_node == kNoNode)
      quota.Unreserve(w);
  }
  cycle_holds.clear();
}

void State::AdmitDeferredBorrowers() {
  // One head per preemption class: its first deferred member in queue order (the members behind
  // it in the class were not tried yet).
  QueueOrder before{&workloads};
  std::map<uint32_t, Slot> head;
  std::vector<Slot> nominated;
  for (Slot s : deferred) {
    if (!IsPending(s)) continue;
    if (workloads[s].nominated_node != kNoNode) nominated.push_back(s);
    auto [it, inserted] = head.emplace(workloads[s].preempt_class, s);
    if (!inserted && before(s, it->second)) it->second = s;
  }
  deferred.clear();
  std::unordered_map<uint32_t, std::string> no_fit;
  std::unordered_map<uint32_t, std::pair<std::string, std::string>> no_preempt;
  // A nominated preemptor that borrows (its victims gone, RunCycle tried it first and deferred
  // it) is tried now, first, as RunCycle tries the nominated ones: the loop below passes over
  // nominated workloads, so without this it would hold its node and quota until it no longer
  // borrowed (scenario 173).
  std::sort(nominated.begin(), nominated.end(), before);
  nominated.erase(std::unique(nominated.begin(), nominated.end()), nominated.end());
  for (Slot s : nominated) Attempt(workloads[s], no_fit, no_preempt);
  while (!head.empty()) {
    // Lowest weighted share after admission first where the cohort shares fairly, then queue order.
    auto best = head.end();
    int64_t best_share = 0;
    for (auto it = head.begin(); it != head.end(); ++it) {
      const Workload& w = workloads[it->second];
      const std::string* cohort = quota.CohortOf(w.namespace_);
      const int64_t share = cohort && quota.FairSharing(*cohort) ? quota.ShareAfter(w) : 0;
      if (best == head.end() || share < best_share ||
          (share == best_share && before(it->second, best->second))) {
        best = it;
        best_share = share;
      }
    }
    const uint32_t cls = best->first;
    const Slot s = best->second;
    Workload& w = workloads[s];
    const bool go_on = w.nominated_node != kNoNode || Attempt(w, no_fit, no_preempt);
    auto set = pending.find(cls);
    if (!go_on || set == pending.end()) {
      head.erase(best);
      continue;
    }
    auto next = set->second.upper_bound(s);
    if (next == set->second.end())
      head.erase(best);
    else
      best->second = *next;
  }
}

}  // namespace arbiter::engine
