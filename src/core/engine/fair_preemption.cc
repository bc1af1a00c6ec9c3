// Preemption toward fair shares (Kueue's fair-sharing preemption, pkg/scheduler/preemption, for a
// flat cohort): in a cohort whose ElasticQuotas set spec.fairSharing, the candidates of
// CollectQuotaCandidates (withinNamespace, reclaimWithinCohort; borrowWithinCohort plays no
// part) are taken namespace by namespace, always from the namespace with the highest weighted
// share (fair_share.h) now; ties by the candidates' order. From that namespace:
//   - the preemptor's own: its first candidate;
//   - another, while the preemptor stays within its min in the resources needing preemption:
//     its first candidate (a plain reclaim of nominal quota);
//   - another, else: the first candidate that passes the first strategy, comparing the
//     preemptor's share once admitted (P) with the target's share before (T0) and after (T1)
//     the eviction: LessThanOrEqualToFinalShare P <= T1, LessThanInitialShare P < T0. The
//     others wait for the second strategy.
// After each eviction the namespaces are ordered again, until the preemptor fits (borrowing
// allowed). If not, with a second strategy ([LessThanOrEqualToFinalShare, LessThanInitialShare]),
// the skipped candidates get a second round: once per namespace, highest share first, its first
// skipped candidate if P < T0. Then victims are given back from the second-to-last chosen while
// the preemptor still fits (Kueue's fillBackWorkloads).
//
// The strategies are PoolPolicy fairSharing.preemptionStrategies (Kueue's Configuration field;
// its default [LessThanOrEqualToFinalShare, LessThanInitialShare]).
#include <algorithm>

#include "core/engine/fair_share.h"
#include "core/engine/state.h"

namespace arbiter::engine {

using Strategy = FairShareStrategy;

std::optional<std::vector<State::FairPick>> State::FairVictims(
    const Workload& w, const QuotaCandidates& c, std::optional<uint32_t> node,
    const std::vector<PdbState>* strict_pdbs, std::vector<std::string>* blocking) const {
  const std::string* cohort = quota.CohortOf(w.namespace_);
  if (!cohort) return std::nullopt;
  const ResourceList lendable = quota.LendableOf(*cohort);
  std::vector<const Workload*> released = c.base;
  std::vector<Slot> chosen;
  std::vector<FairPick> picks;

  auto share = [&](const std::string& ns, const Workload* added) {
    const ElasticQuota* q = quota.ElasticOf(ns);
    return q ? WeightedShare(*q, quota.UsedWith(ns, added, released), lendable) : 0;
  };
  auto borrowing = [&](const std::string& ns) {
    const ElasticQuota* q = quota.ElasticOf(ns);
    if (!q) return false;
    const ResourceList used = quota.UsedWith(ns, nullptr, released);
    for (const auto& [r, u] : used.entries())
      if ((q->min.Has(r) || (q->max && q->max->Has(r))) && u > q->min.Get(r)) return true;
    return false;
  };
  // Kueue's FairSharingPreemptWithinNominal (on by default): the preemptor, once admitted, does
  // not borrow any resource needing preemption.
  bool within_nominal = true;
  if (const ElasticQuota* q = quota.ElasticOf(w.namespace_)) {
    const ResourceList used = quota.UsedWith(w.namespace_, &w, released);
    for (const auto& r : c.needed)
      if (used.Get(r) > q->min.Get(r)) within_nominal = false;
  }

  // Candidates by namespace, in candidate order.
  struct Group {
    std::string ns;
    std::vector<size_t> ks;  // indices into c.slots
    size_t head = 0;
    bool pruned = false;
  };
  auto group = [&](const std::vector<size_t>& ks) {
    std::vector<Group> gs;
    for (size_t k : ks) {
      const std::string& ns = workloads[c.slots[k]].namespace_;
      auto it = std::find_if(gs.begin(), gs.end(), [&](const Group& g) { return g.ns == ns; });
      if (it == gs.end()) {
        gs.push_back(Group{ns, {}, 0, false});
        it = gs.end() - 1;
      }
      it->ks.push_back(k);
    }
    return gs;
  };
  // The namespace with the highest share now (Kueue's TargetClusterQueueOrdering).
  auto next = [&](std::vector<Group>& gs) -> Group* {
    Group* best = nullptr;
    int64_t best_share = 0;
    for (Group& g : gs) {
      if (g.pruned) continue;
      const bool own = g.ns == w.namespace_;
      if (g.head == g.ks.size() || (!own && !borrowing(g.ns))) {
        g.pruned = true;
        continue;
      }
      const int64_t s = share(g.ns, own ? &w : nullptr);
      if (!best || s > best_share || (s == best_share && g.ks[g.head] < best->ks[best->head])) {
        best = &g;
        best_share = s;
      }
    }
    return best;
  };

  bool freed = false, room = !node || FitsOnceGone(*node, w, chosen);
  enum class Took { kSkipped, kTaken, kFits };
  auto take = [&](size_t k, FairRule rule, int64_t p, int64_t before, int64_t after) {
    const Slot s = c.slots[k];
    const bool here = node && workloads[s].node == node_at[*node];
    if (freed && !here) return Took::kSkipped;  // quota is free: only victims on the node help
    chosen.push_back(s);
    if (strict_pdbs && QuotaVictimViolations(w, chosen, {}, *strict_pdbs, blocking) > 0) {
      chosen.pop_back();
      return Took::kSkipped;
    }
    released.push_back(&workloads[s]);
    picks.push_back(FairPick{s, rule, p, before, after});
    if (!freed) freed = QuotaFitsOnceGone(w, released, true);
    if (!room && here) room = FitsOnceGone(*node, w, chosen);
    return freed && room ? Took::kFits : Took::kTaken;
  };
  auto passes = [](Strategy st, int64_t p, int64_t before, int64_t after) {
    return st == Strategy::kLessThanOrEqualToFinalShare ? p <= after : p < before;
  };
  auto after_without = [&](const std::string& ns, size_t k) {
    released.push_back(&workloads[c.slots[k]]);
    const int64_t s = share(ns, nullptr);
    released.pop_back();
    return s;
  };

  static const std::vector<Strategy> kDefault = PoolPolicy{}.fair_preemption_strategies;
  const std::vector<Strategy>& strategies =
      policy.fair_preemption_strategies.empty() ? kDefault : policy.fair_preemption_strategies;
  const size_t num_strategies = strategies.size();
  const Strategy first = strategies[0];
  std::vector<size_t> all(c.slots.size()), retry;
  for (size_t k = 0; k < all.size(); ++k) all[k] = k;
  bool fits = false;
  {
    std::vector<Group> gs = group(all);
    for (Group* g = next(gs); g && !fits; g = next(gs)) {
      const size_t k = g->ks[g->head];
      if (g->ns == w.namespace_ || within_nominal) {
        ++g->head;
        const FairRule rule =
            g->ns == w.namespace_ ? FairRule::kWithinNamespace : FairRule::kWithinNominal;
        const int64_t before = share(g->ns, nullptr);
        fits =
            take(k, rule, share(w.namespace_, &w), before, after_without(g->ns, k)) == Took::kFits;
        continue;
      }
      const int64_t p = share(w.namespace_, &w), before = share(g->ns, nullptr);
      while (g->head < g->ks.size()) {
        const size_t kk = g->ks[g->head++];
        const int64_t after = after_without(g->ns, kk);
        if (!passes(first, p, before, after)) {
          retry.push_back(kk);
          continue;
        }
        const FairRule rule = first == Strategy::kLessThanOrEqualToFinalShare
                                  ? FairRule::kFinalShare
                                  : FairRule::kInitialShare;
        const Took t = take(kk, rule, p, before, after);
        if (t == Took::kSkipped) continue;
        fits = t == Took::kFits;
        break;  // the shares changed: order the namespaces again
      }
    }
  }
  if (!fits && num_strategies > 1) {
    std::sort(retry.begin(), retry.end());
    std::vector<Group> gs = group(retry);
    for (Group* g = next(gs); g && !fits; g = next(gs)) {
      const size_t k = g->ks[g->head++];
      const int64_t p = share(w.namespace_, &w);
      const int64_t before = share(g->ns, nullptr);
      if (passes(strategies[1], p, before, 0))
        fits = take(k, FairRule::kInitialShare, p, before, after_without(g->ns, k)) == Took::kFits;
      g->pruned = true;  // at most once per namespace
    }
  }
  if (!fits) return std::nullopt;
  // Give back, from the second-to-last chosen, every victim the preemptor fits without.
  for (size_t i = picks.size() >= 2 ? picks.size() - 1 : 0; i-- > 0;) {
    std::vector<Slot> without;
    std::vector<const Workload*> rel = c.base;
    for (size_t j = 0; j < picks.size(); ++j)
      if (j != i) {
        without.push_back(picks[j].slot);
        rel.push_back(&workloads[picks[j].slot]);
      }
    if (QuotaFitsOnceGone(w, rel, true) && (!node || FitsOnceGone(*node, w, without)))
      picks.erase(picks.begin() + static_cast<long>(i));
  }
  // The shares the victims' messages give: each victim's namespace before and after its eviction
  // (in order), the preemptor's once all of them are gone and it is admitted.
  released = c.base;
  for (FairPick& p : picks) {
    p.before = share(workloads[p.slot].namespace_, nullptr);
    released.push_back(&workloads[p.slot]);
    p.after = share(workloads[p.slot].namespace_, nullptr);
  }
  const int64_t preemptor_share = share(w.namespace_, &w);
  for (FairPick& p : picks) p.preemptor_share = preemptor_share;
  return picks;
}

std::string State::FairWhy(const Workload& w, const FairPick& p) const {
  const Workload& v = workloads[p.slot];
  const std::string* cohort = quota.CohortOf(w.namespace_);
  std::string out =
      "preempted by " + w.key + " toward fair shares in cohort " + (cohort ? *cohort : "") + ": ";
  const std::string shares = "namespace " + v.namespace_ + "'s share " + FormatShare(p.before) +
                             " -> " + FormatShare(p.after) + ", " + w.namespace_ + "'s " +
                             FormatShare(p.preemptor_share) + " once admitted";
  switch (p.rule) {
    case FairRule::kWithinNamespace:
      return "preempted by " + w.key + " (within the ElasticQuota of namespace " + w.namespace_ +
             ")";
    case FairRule::kWithinNominal:
      return "reclaimed by " + w.key + " (quota lent by " + w.namespace_ + " is needed back; " +
             shares + ")";
    case FairRule::kFinalShare:
      return out + shares + " (LessThanOrEqualToFinalShare)";
    case FairRule::kInitialShare:
      return out + shares + " (LessThanInitialShare)";
  }
  return out;
}

}  // namespace arbiter::engine
