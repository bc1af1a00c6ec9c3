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

namespace {
using FairRule = State::FairRule;
using FairPick = State::FairPick;

// One search of State::FairVictims for `w`: the victims chosen so far (`chosen`, with their picks)
// and what they release.
class FairSearch {
 public:
  FairSearch(const State& s, const Workload& w, const State::QuotaCandidates& c,
             const std::string& cohort, std::optional<uint32_t> node,
             const std::vector<State::PdbState>* strict_pdbs, std::vector<std::string>* blocking)
      : s_(s),
        w_(w),
        c_(c),
        node_(node),
        strict_pdbs_(strict_pdbs),
        blocking_(blocking),
        lendable_(s.quota.LendableOf(cohort)),
        released_(c.base) {}

  std::optional<std::vector<FairPick>> Run();

 private:
  // Candidates by namespace, in candidate order.
  struct Group {
    std::string ns;
    std::vector<size_t> ks;  // indices into c.slots
    size_t head = 0;
    bool pruned = false;
  };
  enum class Took { kSkipped, kTaken, kFits };

  int64_t Share(const std::string& ns, const Workload* added) const;
  bool Borrowing(const std::string& ns) const;
  bool WithinNominal() const;
  std::vector<Group> ByNamespace(const std::vector<size_t>& ks) const;
  Group* Next(std::vector<Group>& gs) const;
  Took Take(size_t k, FairRule rule, int64_t p, int64_t before, int64_t after);
  int64_t AfterWithout(const std::string& ns, size_t k);
  static bool Passes(Strategy st, int64_t p, int64_t before, int64_t after);
  bool FirstRound(Strategy first, bool within_nominal, std::vector<size_t>* retry);
  bool SecondRound(Strategy second, std::vector<size_t> retry);
  void GiveBack();
  void MessageShares();

  const State& s_;
  const Workload& w_;
  const State::QuotaCandidates& c_;
  const std::optional<uint32_t> node_;
  const std::vector<State::PdbState>* const strict_pdbs_;
  std::vector<std::string>* const blocking_;
  const ResourceList lendable_;
  std::vector<const Workload*> released_;
  std::vector<Slot> chosen_;
  std::vector<FairPick> picks_;
  bool freed_ = false, room_ = false;
};

int64_t FairSearch::Share(const std::string& ns, const Workload* added) const {
  const ElasticQuota* q = s_.quota.ElasticOf(ns);
  return q ? WeightedShare(*q, s_.quota.UsedWith(ns, added, released_), lendable_) : 0;
}

bool FairSearch::Borrowing(const std::string& ns) const {
  const ElasticQuota* q = s_.quota.ElasticOf(ns);
  if (!q) return false;
  const ResourceList used = s_.quota.UsedWith(ns, nullptr, released_);
  for (const auto& [r, u] : used.entries())
    if ((q->min.Has(r) || (q->max && q->max->Has(r))) && u > q->min.Get(r)) return true;
  return false;
}

// Kueue's FairSharingPreemptWithinNominal (on by default): the preemptor, once admitted, does not
// borrow any resource needing preemption.
bool FairSearch::WithinNominal() const {
  bool within_nominal = true;
  if (const ElasticQuota* q = s_.quota.ElasticOf(w_.namespace_)) {
    const ResourceList used = s_.quota.UsedWith(w_.namespace_, &w_, released_);
    for (const auto& r : c_.needed)
      if (used.Get(r) > q->min.Get(r)) within_nominal = false;
  }
  return within_nominal;
}

std::vector<FairSearch::Group> FairSearch::ByNamespace(const std::vector<size_t>& ks) const {
  std::vector<Group> gs;
  for (size_t k : ks) {
    const std::string& ns = s_.workloads[c_.slots[k]].namespace_;
    auto it = std::find_if(gs.begin(), gs.end(), [&](const Group& g) { return g.ns == ns; });
    if (it == gs.end()) {
      gs.push_back(Group{ns, {}, 0, false});
      it = gs.end() - 1;
    }
    it->ks.push_back(k);
  }
  return gs;
}

// The namespace with the highest share now (Kueue's TargetClusterQueueOrdering).
FairSearch::Group* FairSearch::Next(std::vector<Group>& gs) const {
  Group* best = nullptr;
  int64_t best_share = 0;
  for (Group& g : gs) {
    if (g.pruned) continue;
    const bool own = g.ns == w_.namespace_;
    if (g.head == g.ks.size() || (!own && !Borrowing(g.ns))) {
      g.pruned = true;
      continue;
    }
    const int64_t s = Share(g.ns, own ? &w_ : nullptr);
    if (!best || s > best_share || (s == best_share && g.ks[g.head] < best->ks[best->head])) {
      best = &g;
      best_share = s;
    }
  }
  return best;
}

FairSearch::Took FairSearch::Take(size_t k, FairRule rule, int64_t p, int64_t before,
                                  int64_t after) {
  const Slot s = c_.slots[k];
  const bool here = node_ && s_.workloads[s].node == s_.node_at[*node_];
  if (freed_ && !here) return Took::kSkipped;  // quota is free: only victims on the node help
  chosen_.push_back(s);
  if (strict_pdbs_ && s_.QuotaVictimViolations(w_, chosen_, {}, *strict_pdbs_, blocking_) > 0) {
    chosen_.pop_back();
    return Took::kSkipped;
  }
  released_.push_back(&s_.workloads[s]);
  picks_.push_back(FairPick{s, rule, p, before, after});
  if (!freed_) freed_ = s_.QuotaFitsOnceGone(w_, released_, true);
  if (!room_ && here) room_ = s_.FitsOnceGone(*node_, w_, chosen_);
  return freed_ && room_ ? Took::kFits : Took::kTaken;
}

int64_t FairSearch::AfterWithout(const std::string& ns, size_t k) {
  released_.push_back(&s_.workloads[c_.slots[k]]);
  const int64_t s = Share(ns, nullptr);
  released_.pop_back();
  return s;
}

bool FairSearch::Passes(Strategy st, int64_t p, int64_t before, int64_t after) {
  return st == Strategy::kLessThanOrEqualToFinalShare ? p <= after : p < before;
}

// Namespace by namespace, highest share first: the own namespace's and (within nominal) the
// others' first candidates; else the first that passes the `first` strategy (the others go to
// `retry`). True once the preemptor fits.
bool FairSearch::FirstRound(Strategy first, bool within_nominal, std::vector<size_t>* retry) {
  std::vector<size_t> all(c_.slots.size());
  for (size_t k = 0; k < all.size(); ++k) all[k] = k;
  bool fits = false;
  std::vector<Group> gs = ByNamespace(all);
  for (Group* g = Next(gs); g && !fits; g = Next(gs)) {
    const size_t k = g->ks[g->head];
    if (g->ns == w_.namespace_ || within_nominal) {
      ++g->head;
      const FairRule rule =
          g->ns == w_.namespace_ ? FairRule::kWithinNamespace : FairRule::kWithinNominal;
      const int64_t before = Share(g->ns, nullptr);
      fits =
          Take(k, rule, Share(w_.namespace_, &w_), before, AfterWithout(g->ns, k)) == Took::kFits;
      continue;
    }
    const int64_t p = Share(w_.namespace_, &w_), before = Share(g->ns, nullptr);
    while (g->head < g->ks.size()) {
      const size_t kk = g->ks[g->head++];
      const int64_t after = AfterWithout(g->ns, kk);
      if (!Passes(first, p, before, after)) {
        retry->push_back(kk);
        continue;
      }
      const FairRule rule = first == Strategy::kLessThanOrEqualToFinalShare
                                ? FairRule::kFinalShare
                                : FairRule::kInitialShare;
      const Took t = Take(kk, rule, p, before, after);
      if (t == Took::kSkipped) continue;
      fits = t == Took::kFits;
      break;  // the shares changed: order the namespaces again
    }
  }
  return fits;
}

// The skipped candidates once more, at most one per namespace, highest share first: its first if
// it passes the `second` strategy.
bool FairSearch::SecondRound(Strategy second, std::vector<size_t> retry) {
  std::sort(retry.begin(), retry.end());
  bool fits = false;
  std::vector<Group> gs = ByNamespace(retry);
  for (Group* g = Next(gs); g && !fits; g = Next(gs)) {
    const size_t k = g->ks[g->head++];
    const int64_t p = Share(w_.namespace_, &w_);
    const int64_t before = Share(g->ns, nullptr);
    if (Passes(second, p, before, 0))
      fits = Take(k, FairRule::kInitialShare, p, before, AfterWithout(g->ns, k)) == Took::kFits;
    g->pruned = true;  // at most once per namespace
  }
  return fits;
}

// Give back, from the second-to-last chosen, every victim the preemptor fits without.
void FairSearch::GiveBack() {
  for (size_t i = picks_.size() >= 2 ? picks_.size() - 1 : 0; i-- > 0;) {
    std::vector<Slot> without;
    std::vector<const Workload*> rel = c_.base;
    for (size_t j = 0; j < picks_.size(); ++j)
      if (j != i) {
        without.push_back(picks_[j].slot);
        rel.push_back(&s_.workloads[picks_[j].slot]);
      }
    if (s_.QuotaFitsOnceGone(w_, rel, true) && (!node_ || s_.FitsOnceGone(*node_, w_, without)))
      picks_.erase(picks_.begin() + static_cast<long>(i));
  }
}

// The shares the victims' messages give: each victim's namespace before and after its eviction
// (in order), the preemptor's once all of them are gone and it is admitted.
void FairSearch::MessageShares() {
  released_ = c_.base;
  for (FairPick& p : picks_) {
    p.before = Share(s_.workloads[p.slot].namespace_, nullptr);
    released_.push_back(&s_.workloads[p.slot]);
    p.after = Share(s_.workloads[p.slot].namespace_, nullptr);
  }
  const int64_t preemptor_share = Share(w_.namespace_, &w_);
  for (FairPick& p : picks_) p.preemptor_share = preemptor_share;
}

std::optional<std::vector<FairPick>> FairSearch::Run() {
  const bool within_nominal = WithinNominal();
  room_ = !node_ || s_.FitsOnceGone(*node_, w_, chosen_);
  static const std::vector<Strategy> kDefault = PoolPolicy{}.fair_preemption_strategies;
  const std::vector<Strategy>& strategies = s_.policy.fair_preemption_strategies.empty()
                                                ? kDefault
                                                : s_.policy.fair_preemption_strategies;
  std::vector<size_t> retry;
  bool fits = FirstRound(strategies[0], within_nominal, &retry);
  if (!fits && strategies.size() > 1) fits = SecondRound(strategies[1], std::move(retry));
  if (!fits) return std::nullopt;
  GiveBack();
  MessageShares();
  return std::move(picks_);
}
}  // namespace

std::optional<std::vector<State::FairPick>> State::FairVictims(
    const Workload& w, const QuotaCandidates& c, std::optional<uint32_t> node,
    const std::vector<PdbState>* strict_pdbs, std::vector<std::string>* blocking) const {
  const std::string* cohort = quota.CohortOf(w.namespace_);
  if (!cohort) return std::nullopt;
  return FairSearch(*this, w, c, *cohort, node, strict_pdbs, blocking).Run();
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
