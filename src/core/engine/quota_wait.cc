// How long quota preemption waits for minRuntime (PoolPolicy preemption.minRuntime): candidates
// younger than it are not victims yet (quota_preemption.cc). The wait ends at the earliest instant
// T at which the candidates that have run minRuntime by T free the preemptor's quota under the
// reclaim's own rule (Kueue's candidates, order, validity and attempts as of T; greedy, then
// minimal); the reason names the young candidates that victim set needs and T
// ("reclaiming lent quota: 1 borrowing workload(s) become reclaimable at 30m (minRuntime 30m)").
// It assumes the pool stays as it is until then.
#include <algorithm>

#include "core/engine/state.h"

namespace arbiter::engine {

std::optional<std::vector<Slot>> State::QuotaOnlyVictims(const Workload& w,
                                                         const QuotaCandidates& c) const {
  const bool strict = policy.disruption_budgets == DisruptionBudgetMode::kStrict && !pdbs.empty();
  std::vector<PdbState> pdb_state;
  if (strict) ComputePdbState(&pdb_state);
  const std::string* cohort = quota.CohortOf(w.namespace_);
  // Under fair sharing the strategies choose, for a pod and a pod group alike (reclaim_planner.h).
  if (cohort && quota.FairSharing(*cohort)) {
    auto picks = FairVictims(w, c, std::nullopt, strict ? &pdb_state : nullptr);
    if (!picks) return std::nullopt;
    std::vector<Slot> out;
    for (const FairPick& p : *picks) out.push_back(p.slot);
    return out;
  }
  auto released_of = [&](const std::vector<Slot>& victims) {
    std::vector<const Workload*> released = c.base;
    for (Slot s : victims) released.push_back(&workloads[s]);
    return released;
  };
  for (const bool allow : c.attempts) {
    std::vector<Slot> chosen;
    std::vector<const Workload*> released = c.base;
    bool freed = false;
    for (size_t k = 0; k < c.slots.size() && !freed; ++k) {
      if (!QuotaCandidateValid(c, k, released, allow)) continue;
      chosen.push_back(c.slots[k]);
      if (strict && QuotaVictimViolations(w, chosen, {}, pdb_state, nullptr) > 0) {
        chosen.pop_back();
        continue;
      }
      released.push_back(&workloads[c.slots[k]]);
      freed = QuotaFitsOnceGone(w, released, allow);
    }
    if (!freed) continue;
    for (size_t k = chosen.size(); k-- > 0;) {
      std::vector<Slot> without = chosen;
      without.erase(without.begin() + static_cast<long>(k));
      if (QuotaFitsOnceGone(w, released_of(without), allow)) chosen = std::move(without);
    }
    return chosen;
  }
  return std::nullopt;
}

std::optional<State::QuotaWait> State::EarliestQuotaWait(const Workload& w,
                                                         const QuotaCandidates& c) const {
  auto of_age = [&](Slot s) { return workloads[s].run_start + policy.min_runtime; };
  std::vector<Slot> young = c.young;
  std::sort(young.begin(), young.end(),
            [&](Slot a, Slot b) { return of_age(a) != of_age(b) ? of_age(a) < of_age(b) : a < b; });
  std::vector<Millis> instants;
  for (Slot s : young) instants.push_back(of_age(s));
  instants.erase(std::unique(instants.begin(), instants.end()), instants.end());
  // The quota can be freed by T only if every candidate of age by T gone frees it (with
  // borrowing allowed): true from some instant on. Binary search for it, then walk from there.
  auto all_gone_frees = [&](Millis t) {
    std::vector<const Workload*> released = c.base;
    for (Slot s : c.slots) released.push_back(&workloads[s]);
    for (Slot s : young)
      if (of_age(s) <= t) released.push_back(&workloads[s]);
    return QuotaFitsOnceGone(w, released, true);
  };
  size_t lo = 0, hi = instants.size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (all_gone_frees(instants[mid]))
      hi = mid;
    else
      lo = mid + 1;
  }
  for (size_t i = lo; i < instants.size(); ++i) {
    const Millis t = instants[i];
    QuotaCandidates at = CollectQuotaCandidates(w, t);
    {  // never a member of `w`'s own pod group (as the group's reclaim)
      QuotaCandidates kept = at;
      kept.slots.clear();
      kept.variant.clear();
      for (size_t k = 0; k < at.slots.size(); ++k)
        if (!SameGang(workloads[at.slots[k]], w)) {
          kept.slots.push_back(at.slots[k]);
          kept.variant.push_back(at.variant[k]);
        }
      at = std::move(kept);
    }
    const auto victims = QuotaOnlyVictims(w, at);
    if (!victims) continue;
    QuotaWait wait;
    wait.at = t;
    for (Slot s : *victims)
      if (std::find(young.begin(), young.end(), s) != young.end()) wait.needed.push_back(s);
    if (wait.needed.empty()) return std::nullopt;  // not minRuntime that it waits for
    std::sort(wait.needed.begin(), wait.needed.end(),
              [&](Slot a, Slot b) { return Value(workloads[a].id) < Value(workloads[b].id); });
    return wait;
  }
  return std::nullopt;
}

}  // namespace arbiter::engine
