// Quota preemption over ElasticQuotas, with Kueue's semantics and field names (its classical
// preemption: pkg/scheduler/preemption, flat cohorts). A namespace is a ClusterQueue, its min the
// nominal quota, its max the nominal quota plus the borrowing limit.
//
// Candidates (CollectQuotaCandidates):
//   - spec.preemption.withinNamespace (Never | LowerPriority | LowerOrNewerEqualPriority): running
//     workloads of the preemptor's own namespace;
//   - spec.preemption.reclaimWithinCohort (Never | LowerPriority | Any): every running workload of
//     another namespace of the cohort that is above its min in a resource the preemptor needs
//     (not only those that were borrowing when admitted);
//   - each must use a resource that needs preemption and have run minRuntime.
// Order: other namespaces first, then lowest priority, then (victimOrder LeastLostWork) the least
// work lost, then most recently admitted, then name.
// A candidate of another namespace is a plain reclaim when the preemptor stays within its min;
// otherwise it may be taken only if the preemptor then does not borrow, unless
// borrowWithinCohort.policy LowerPriority allows it (victim priority below the preemptor's and,
// with maxPriorityThreshold, at most that).
// Attempts (allowBorrowing true/false) in Kueue's order; each removes valid candidates in order
// until the preemptor fits, then gives victims back in reverse order while it still fits
// (reclaim.cc, which also dry-runs the placement).
#include <algorithm>

#include "core/duration.h"
#include "core/engine/lost_work.h"
#include "core/engine/reasons.h"
#include "core/engine/state.h"
#include "core/instant_text.h"

namespace arbiter::engine {

State::QuotaPolicy State::QuotaPolicyOf(const ElasticQuota& q) const {
  QuotaPolicy p;
  p.within = q.preemption.within_namespace.value_or(WithinNamespacePolicy::kNever);
  p.reclaim = q.preemption.reclaim_within_cohort.value_or(policy.reclaim);
  p.borrow = q.preemption.borrow_within_cohort.value_or(BorrowWithinCohortPolicy::kNever) ==
             BorrowWithinCohortPolicy::kLowerPriority;
  p.threshold = q.preemption.max_priority_threshold;
  return p;
}

namespace {
// Needed resources of a flavored quota are per flavor ("nvidia.com/gpu@h100"): only workloads
// holding that flavor use them.
bool UsesAny(const QuotaBook& quota, const Workload& v, const std::vector<std::string>& needed) {
  if (!v.flavor.empty()) {
    const ResourceList tagged = quota.ElasticRequestsOf(v);
    for (const auto& r : needed)
      if (tagged.Get(r) > 0) return true;
    return false;
  }
  for (const auto& r : needed)
    if (v.requests.Get(r) > 0) return true;
  return false;
}

// What CollectQuotaCandidates decides with: the preemptor, its namespace's ElasticQuota and
// policy, and the instant minRuntime is counted to.
struct QuotaSearch {
  const State& s;
  const Workload& w;
  const ElasticQuota& q;
  State::QuotaPolicy pol;
  Millis as_of;
  // Kueue's hierarchical advantage in a flat cohort: the preemptor fits within its own min.
  bool within_min = false;
};

// Without withinNamespace, a preemptor that would borrow can only take from others under
// borrowWithinCohort (without it, it would have to fit within its min, which it does not).
// Under fair sharing the strategies decide instead (fair_preemption.cc).
bool QuotaMayPreemptAtAll(const QuotaSearch& c) {
  const std::string& cohort = c.q.cohort;
  const bool fair = c.s.quota.FairSharing(cohort);
  return !(c.pol.within == WithinNamespacePolicy::kNever &&
           (cohort.empty() || c.pol.reclaim == ReclaimMode::kNever ||
            (!fair && !c.within_min && !c.pol.borrow)));
}

// Kueue's flavor assigner (fitsResourceQuota): preemption is possible only for a request within
// the nominal quota, unless the namespace may preempt while borrowing (borrowWithinCohort, or
// fair sharing with reclaimWithinCohort): otherwise NoFit, and no workload of any namespace,
// its own included, is evicted for it.
bool QuotaRequestBeyondMin(const QuotaSearch& c, const std::vector<std::string>& needed) {
  const bool fair = c.s.quota.FairSharing(c.q.cohort);
  if (c.pol.borrow || (fair && c.pol.reclaim != ReclaimMode::kNever)) return false;
  const ResourceList requested = c.s.quota.ElasticRequestsOf(c.w);
  for (const auto& r : needed)
    if (requested.Get(r) > c.q.min.Get(r)) return true;
  return false;
}

// Kueue's queueUnderNominalInResourcesNeedingPreemption: usage strictly below min.
bool QuotaUnderMin(const QuotaSearch& c, const std::vector<std::string>& needed) {
  const ResourceList used = c.s.quota.UsageOf(c.w.namespace_);
  for (const auto& r : needed)
    if (used.Get(r) >= c.q.min.Get(r)) return false;
  return true;
}

// withinNamespace (a victim `v` of the preemptor's own namespace) or reclaimWithinCohort (of
// another namespace of the cohort) allows `v`.
bool QuotaPolicyAllows(const QuotaSearch& c, const Workload& v, bool same_ns) {
  const Workload& w = c.w;
  if (same_ns) {
    switch (c.pol.within) {
      case WithinNamespacePolicy::kNever:
        return false;
      case WithinNamespacePolicy::kLowerPriority:
        return v.priority < w.priority;
      case WithinNamespacePolicy::kLowerOrNewerEqualPriority:
        return v.priority < w.priority ||
               (v.priority == w.priority && w.submit_time < v.submit_time);
    }
    return false;
  }
  switch (c.pol.reclaim) {
    case ReclaimMode::kNever:
      return false;
    case ReclaimMode::kLowerPriority:
      return v.priority < w.priority;
    case ReclaimMode::kAny:
      return true;
  }
  return false;
}

// How a candidate `v` of another namespace may be taken: a plain reclaim when the preemptor stays
// within its min, else without borrowing unless borrowWithinCohort allows it.
State::QuotaVariant QuotaVariantOf(const QuotaSearch& c, const Workload& v) {
  using Variant = State::QuotaVariant;
  if (c.within_min) return Variant::kReclaim;
  if (!c.pol.borrow || v.priority >= c.w.priority ||
      (c.pol.threshold && v.priority > *c.pol.threshold))
    return Variant::kReclaimWithoutBorrowing;
  return Variant::kReclaimWhileBorrowing;
}

// The workloads of the namespace and its cohort, in slot order: terminating ones to `base`,
// the running ones the policy allows (and old enough) to `slots`, the young ones to `young`.
// `any_other`, `any_reclaim`: a candidate of another namespace, a plain reclaim among them.
void GatherQuotaCandidates(const QuotaSearch& c, State::QuotaCandidates& out, bool* any_other,
                           bool* any_reclaim) {
  const State& s = c.s;
  const Workload& w = c.w;
  const std::string& cohort = c.q.cohort;
  // Namespaces of the cohort above their min (needed resources).
  std::vector<std::string> borrowing_ns;
  for (const NodeLive& live : s.node_live)
    for (Slot slot : live.workloads) {
      const Workload& v = s.workloads[slot];
      const bool same_ns = v.namespace_id == w.namespace_id;
      if (!same_ns) {
        if (cohort.empty()) continue;
        const std::string* vc = s.quota.CohortOf(v.namespace_);
        if (!vc || *vc != cohort) continue;
      }
      if (v.phase == Phase::kTerminating) {
        out.base.push_back(&v);
        continue;
      }
      if (v.phase != Phase::kRunning || v.id == w.id || !UsesAny(s.quota, v, out.needed) ||
          !QuotaPolicyAllows(c, v, same_ns))
        continue;
      if (!same_ns) {
        bool above =
            std::find(borrowing_ns.begin(), borrowing_ns.end(), v.namespace_) != borrowing_ns.end();
        if (!above) {
          above = s.quota.AboveMin(v.namespace_, out.needed, {});
          if (above) borrowing_ns.push_back(v.namespace_);
        }
        if (!above) continue;
      }
      if (c.as_of - v.run_start < s.policy.min_runtime) {
        const Millis at = v.run_start + s.policy.min_runtime;
        out.young_until = out.young_until ? std::min(*out.young_until, at) : at;
        out.young.push_back(slot);
        continue;
      }
      State::QuotaVariant var = State::QuotaVariant::kWithinNamespace;
      if (!same_ns) {
        *any_other = true;
        var = QuotaVariantOf(c, v);
        if (var == State::QuotaVariant::kReclaim) *any_reclaim = true;
      }
      out.slots.push_back(slot);
      out.variant.push_back(var);
    }
}

// Kueue's CandidatesOrdering (evicted workloads are `base`, already on their way out, by id).
// Under victimOrder LeastLostWork, the least work lost first among equal priorities
// (lost_work.h), before the most recently admitted.
State::QuotaCandidates SortQuotaCandidates(const QuotaSearch& c, State::QuotaCandidates out) {
  const State& s = c.s;
  const auto& workloads = s.workloads;
  std::sort(out.base.begin(), out.base.end(),
            [](const Workload* a, const Workload* b) { return Value(a->id) < Value(b->id); });
  std::vector<size_t> idx(out.slots.size());
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = k;
  std::vector<LostWork> lost;
  if (s.policy.victim_order == VictimOrder::kLeastLostWork)
    for (Slot slot : out.slots)
      lost.push_back(LostWorkIfStopped(workloads[slot], s.GraceOf(workloads[slot]), c.as_of));
  const uint32_t ns = c.w.namespace_id;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    const Workload &x = workloads[out.slots[a]], &y = workloads[out.slots[b]];
    const bool xo = x.namespace_id != ns, yo = y.namespace_id != ns;
    if (xo != yo) return xo;
    if (x.priority != y.priority) return x.priority < y.priority;
    if (!lost.empty() && lost[a] != lost[b]) return lost[a] < lost[b];
    if (x.run_start != y.run_start) return x.run_start > y.run_start;
    if (x.key != y.key) return x.key < y.key;
    return Value(x.id) < Value(y.id);
  });
  State::QuotaCandidates sorted;
  sorted.needed = std::move(out.needed);
  sorted.base = std::move(out.base);
  sorted.young_until = out.young_until;
  sorted.young = std::move(out.young);
  sorted.within_min = c.within_min;
  for (size_t k : idx) {
    sorted.slots.push_back(out.slots[k]);
    sorted.variant.push_back(out.variant[k]);
  }
  return sorted;
}

// Kueue's classicalPreemptions: which attempts (allowBorrowing), in which order.
std::vector<bool> QuotaAttempts(const QuotaSearch& c, bool any_other, bool any_reclaim,
                                bool under_min) {
  if (!any_other || (!c.pol.borrow && !under_min)) return {true};
  if (!c.pol.borrow && !any_reclaim) return {false, true};
  return {true, false};
}
}  // namespace

State::QuotaCandidates State::CollectQuotaCandidates(const Workload& w, Millis as_of) const {
  if (as_of < 0) as_of = now;
  QuotaCandidates out;
  const ElasticQuota* q = quota.ElasticOf(w.namespace_);
  if (!q) return out;
  const QuotaSearch c{*this, w, *q, QuotaPolicyOf(*q), as_of, quota.CheckElastic(w).within_min};
  if (!QuotaMayPreemptAtAll(c)) return out;
  out.needed = quota.ShortOf(w);
  if (out.needed.empty()) return out;
  if (QuotaRequestBeyondMin(c, out.needed)) {
    out.needed.clear();
    out.beyond_min = true;
    return out;
  }
  const bool under_min = QuotaUnderMin(c, out.needed);
  bool any_other = false, any_reclaim = false;
  GatherQuotaCandidates(c, out, &any_other, &any_reclaim);
  QuotaCandidates sorted = SortQuotaCandidates(c, std::move(out));
  sorted.attempts = QuotaAttempts(c, any_other, any_reclaim, under_min);
  return sorted;
}

bool State::QuotaCandidateValid(const QuotaCandidates& c, size_t k,
                                const std::vector<const Workload*>& released,
                                bool allow_borrowing) const {
  if (c.variant[k] == QuotaVariant::kWithinNamespace) return true;
  if (allow_borrowing && c.variant[k] == QuotaVariant::kReclaimWithoutBorrowing) return false;
  return quota.AboveMin(workloads[c.slots[k]].namespace_, c.needed, released);
}

bool State::QuotaFitsOnceGone(const Workload& w, const std::vector<const Workload*>& released,
                              bool allow_borrowing) const {
  const auto r = quota.CheckElastic(w, released);
  return r.ok && (allow_borrowing || !r.borrowing);
}

void State::DropOwnGroup(QuotaCandidates* c, const Workload& w) const {
  if (w.gang == kNoGang) return;
  QuotaCandidates kept = *c;
  kept.slots.clear();
  kept.variant.clear();
  kept.young.clear();
  for (size_t k = 0; k < c->slots.size(); ++k)
    if (!SameGang(workloads[c->slots[k]], w)) {
      kept.slots.push_back(c->slots[k]);
      kept.variant.push_back(c->variant[k]);
    }
  for (Slot v : c->young)
    if (!SameGang(workloads[v], w)) kept.young.push_back(v);
  *c = std::move(kept);
}

std::string State::YoungCandidatesMessage(const Workload& w, const QuotaCandidates& c) const {
  if (c.young.empty() || !c.young_until) return "";
  // Only when the quota waits for them: the candidates of now do not free it, these would.
  std::vector<const Workload*> released = c.base;
  for (Slot s : c.slots) released.push_back(&workloads[s]);
  if (QuotaFitsOnceGone(w, released, true)) return "";
  const std::optional<QuotaWait> wait = EarliestQuotaWait(w, c);
  if (!wait) return "";
  size_t own = 0, at = 0;
  for (Slot s : wait->needed) {
    own += workloads[s].namespace_id == w.namespace_id;
    at += workloads[s].run_start + policy.min_runtime == wait->at;
  }
  const std::string n = std::to_string(wait->needed.size());
  const std::string when = (at == wait->needed.size() ? " at " : " by ") + FormatInstant(wait->at) +
                           " (minRuntime " + FormatDuration(policy.min_runtime) + ")";
  if (own == 0 && c.within_min)
    return "reclaiming lent quota: " + n + " borrowing workload(s) become reclaimable" + when;
  if (own == wait->needed.size())
    return "preempting within the quota of namespace " + w.namespace_ + ": " + n +
           " workload(s) become preemptable" + when;
  return "quota preemption: " + n + " workload(s) become preemptable" + when;
}

void State::StopWithinNamespace(Workload& v, const Workload& p) {
  if (v.phase == Phase::kTerminating) {  // stopped already with its pod group: this one waits too
    if (v.preemptor == kNoSlot) v.preemptor = p.slot;
    return;
  }
  const Millis grace = GraceOf(v);
  Signal(v, grace);
  v.preempted_by = p.key;
  v.preemptor = p.slot;
  v.preemptions++;
  const std::string msg = "preempted by " + p.key + " (within the ElasticQuota of namespace " +
                          p.namespace_ + "); SIGTERM, grace " + FormatDuration(grace);
  SetMessage(v, msg, reason::kPreempted, WorkFacts::kStopPlan);
  Emit(EventType::kPreempted, v, node_info[v.node].name, reason::kPreempted, msg, p.key,
       WorkFacts::kStopPlan, grace);
  if (v.gang != kNoGang) StopGang(v, p.key);  // its pod group shares its fate
}

}  // namespace arbiter::engine
