// How long quota preemption waits for minRuntime (PoolPolicy preemption.minRuntime): candidates
// younger than it are not victims yet (quota_preemption.cc). The wait ends at the earliest instant
// T at which the candidates that have run minRuntime by T free the preemptor's quota under the
// reclaim's own rule (Kueue's candidates, order, validity and attempts as of T; greedy, then
// minimal); the reason names the young candidates that victim set needs and T
// ("reclaiming lent quota: 1 borrowing workload(s) become reclaimable at 30m (minRuntime 30m)").
// It assumes the pool stays as it is until then.
#include <algorithm>

#include "core/engine/state.h"
#include "core/engine/victim_sets.h"

namespace arbiter::engine {

std::optional<std::vector<Slot>> State::QuotaOnlyVictims(const Workload& w,
                                                         const QuotaCandidates& c) const {
  return VictimSets(*this, w, c).MinimalSet(c.attempts, VictimSets::Room{});
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
    DropOwnGroup(&at, w);  // as the reclaim planner
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
