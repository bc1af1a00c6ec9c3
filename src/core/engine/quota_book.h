// Quota accounting for admission: Kubernetes ResourceQuota (hard limits per namespace, with
// PriorityClass scopes) and Arbiter ElasticQuota (min guaranteed, max ceiling, lending inside a
// cohort). Pure bookkeeping over its own copies of the quota objects: charge on admission, release
// on exit, hold for preemptors waiting for their victims.
//
// Quotas may change at runtime (Set*/Delete* then Recount): usage is recounted from the workloads
// that hold resources, and a limit lowered below usage never evicts. The invariants then allow
// usage above a limit only as far as it was when the limit changed, shrinking as workloads leave:
// admissions never push usage above a limit.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/engine/admission.h"
#include "core/engine/workload.h"
#include "core/objects.h"

namespace arbiter::engine {

// Quota per resource flavor (ElasticQuota spec.flavors): a covered resource is accounted under
// the key "<resource>@<flavor>" of the flavor the workload was assigned (Workload::flavor), so that
// every rule below (max, borrowing, lending limits, reclaim, preemption candidates) holds per
// flavor. ExpandFlavors adds those keys to min/max/lendingLimit (absent min: 0).
std::string FlavorKey(const std::string& resource, const std::string& flavor);
std::string FlavorBase(const std::string& key);    // "nvidia.com/gpu@h100" -> "nvidia.com/gpu"
std::string FlavorSuffix(const std::string& key);  // " of flavor h100", "" for a plain resource
bool FlavorCovers(const ElasticQuota& q, const std::string& resource);
ElasticQuota ExpandFlavors(const ElasticQuota& q);
// `w`'s requests as quota `x` (expanded) counts them: covered resources under its flavor's keys.
ResourceList ElasticRequests(const Workload& w, const ElasticQuota& x);

class QuotaBook {
 public:
  // ResourceQuotas keep the order of their first Set (their messages are checked in that order).
  void SetResourceQuota(const ResourceQuota& q);
  Status DeleteResourceQuota(const std::string& ns, const std::string& name);
  // One per namespace: AlreadyExists when the namespace has another one.
  Status SetElasticQuota(const ElasticQuota& q);
  Status DeleteElasticQuota(const std::string& ns, const std::string& name);
  // Usage of every quota recounted from `charged` (the workloads that hold resources), after a
  // change. Holds are not touched: drop them (Unreserve) before a change, take them again after.
  void Recount(const std::vector<const Workload*>& charged);

  // Why a workload can never be admitted under a ResourceQuota, in Kubernetes' words alone (what
  // kube-apiserver's quota admission refuses a create with).
  struct NeverAdmitted {
    // QuotaContainerConstraints' "must specify ..." message, or for a request above `hard`
    // "exceeded quota: <quota>, requested: ..., used: ..., limited: ..." (usage as of now).
    std::string words;
    // True for a request above `hard`: a workload rejected for it is told `words` then
    // kNeverAdmitted, which says that no usage can ever make room for it.
    bool over_hard = false;
  };
  static constexpr std::string_view kNeverAdmitted =
      " (more than the quota allows: can never be admitted)";
  // A reason the workload can never be admitted under a ResourceQuota: a container that does not
  // set a cpu/memory request or limit a matching quota tracks (Kubernetes' "must specify",
  // checked for every quota first), or a request larger than the hard limit itself (over_hard).
  std::optional<NeverAdmitted> NeverAdmissible(const Workload& w, const AdmittedPod& pod) const;
  // ResourceQuota check against current usage; the message names quota, resource, requested,
  // used and hard.
  std::optional<std::string> ResourceQuotaBlocked(const Workload& w) const;

  struct ElasticResult {
    bool ok = true;
    bool borrowing = false;   // admission would put the namespace above its min
    bool over_max = false;    // blocked by the namespace's own max: no reclaim can help
    bool within_min = false;  // the namespace would stay within its min (may reclaim)
    std::string message;      // why blocked
  };
  // `released` lists workloads whose usage should be treated as already gone (reclaim planning).
  ElasticResult CheckElastic(const Workload& w,
                             const std::vector<const Workload*>& released = {}) const;
  bool HasElastic(const std::string& ns) const { return eq_index_.count(ns) > 0; }
  bool HasAnyQuota(const std::string& ns) const {
    return eq_index_.count(ns) > 0 || rq_by_ns_.count(ns) > 0;
  }
  const std::string* CohortOf(const std::string& ns) const;
  // True when the namespace's usage is above its min in any resource.
  bool IsBorrowing(const std::string& ns) const;
  // The namespace's ElasticQuota with its flavors expanded (ExpandFlavors).
  const ElasticQuota* ElasticOf(const std::string& ns) const;
  // spec.flavors of the namespace's ElasticQuota in fallback order; null when it has none.
  const std::vector<QuotaFlavor>* FlavorsOf(const std::string& ns) const;
  ResourceList ElasticRequestsOf(const Workload& w) const;
  // Usage (charged plus held) of every flavor of every ElasticQuota, by plain resource name.
  struct FlavorUsage {
    std::string namespace_, flavor;
    ResourceList used, min;
    std::optional<ResourceList> max;
  };
  std::vector<FlavorUsage> FlavorUsages() const;
  // Quota preemption (quota_preemption.cc): the tracked resources `w` asks for that do not fit now
  // (its namespace's max, or the cohort's lendable quota) — Kueue's "flavor-resources needing
  // preemption"; whether namespace `ns`, once `released` are gone, is still above its min in one
  // of `resources` (Kueue: its ClusterQueue is still borrowing them).
  std::vector<std::string> ShortOf(const Workload& w) const;
  bool AboveMin(const std::string& ns, const std::vector<std::string>& resources,
                const std::vector<const Workload*>& released) const;
  // Usage (charged plus held) minus min of `ns`'s ElasticQuota, per tracked resource (negative:
  // unused guarantee); the denominators of the weighted dominant-resource share live in
  // fair_share.cc.
  ResourceList UsageOf(const std::string& ns) const;
  // Fair sharing (fair_share.h): whether some ElasticQuota of `cohort` sets spec.fairSharing, and
  // the weighted share of `w`'s namespace once `w` is admitted.
  bool FairSharing(const std::string& cohort) const;
  int64_t ShareAfter(const Workload& w) const;
  // Fair-sharing preemption (fair_preemption.cc): the usage of `ns`'s ElasticQuota (tracked
  // resources, charged plus held) with `added` admitted (null: none; its own hold not counted
  // twice) and `released` gone; what `cohort` lends (fair_share.h's denominators).
  ResourceList UsedWith(const std::string& ns, const Workload* added,
                        const std::vector<const Workload*>& released) const;
  ResourceList LendableOf(const std::string& cohort) const;
  bool AnyCohort() const;

  // Holds `w`'s ElasticQuota share (and ResourceQuota amounts) while the workloads reclaimed or
  // preempted for it exit, so that nobody else borrows it back in the meantime.
  void Reserve(const Workload& w);
  void Unreserve(const Workload& w);
  bool Holds(const Workload& w) const;

  void Charge(const Workload& w);
  void Release(const Workload& w);
  // Kubernetes' object count quota: `count/pods` counts a pod object until it is deleted, terminal
  // or not (`pods` counts pods that are not terminal). A workload that ends (Succeeded, Failed,
  // Preempted) in a namespace with a matching `count/pods` quota stays counted there until
  // ForgetCounted (DeletePod). Call KeepCounted after its Release.
  void KeepCounted(const Workload& w);
  bool ForgetCounted(uint64_t id);  // false: not counted

  // What the engine answers about quota usage (quota_usage.cc; engine.h).
  std::vector<ResourceQuotaUsage> ResourceQuotaUsages() const;
  std::vector<ElasticQuotaUsage> ElasticQuotaUsages() const;
  // Namespace `ns`'s alone (engine.h): O(its quotas).
  std::vector<ResourceQuotaUsage> ResourceQuotaUsagesOf(const std::string& ns) const;
  std::optional<ElasticQuotaUsage> ElasticQuotaUsageWithoutLent(const std::string& ns) const;

  // Invariant helpers.
  std::optional<std::string> CheckInvariants() const;
  // What Reindex derives, and the cohort sums Charge/Release/Reserve/Unreserve move, against a
  // fresh count.
  std::optional<std::string> CheckIndex() const;

  std::vector<ResourceQuota> resource_quotas() const;
  std::vector<ElasticQuota> elastic_quotas() const;

  // The bookkeeping, for snapshots (snapshot.cc): every map keyed by workload id.
  struct RqHold {
    size_t rq;
    std::string key;
    int64_t amount;
  };
  struct RQ {
    ResourceQuota q;
    std::map<std::string, int64_t> used;       // key -> used
    std::map<std::string, int64_t> reserved;   // key -> held for preemptors waiting for victims
    std::map<std::string, int64_t> allowance;  // key -> usage allowed above hard (after a change)
  };
  struct EQ {
    ElasticQuota q;  // as set
    ResourceList used;
    ResourceList reserved;
    ResourceList allowance;  // usage allowed above max (after a change)
    ElasticQuota x;          // q with its flavors expanded (Reindex; not in snapshots)
    // Derived by Reindex (not in snapshots): the eqs_ indices of its cohort in eqs_ order (only
    // itself when it has no cohort), its own position there, the resources it tracks (sorted).
    // (One list per cohort, shared by its members: not a copy each, O(cohort^2).)
    std::shared_ptr<const std::vector<size_t>> members;
    size_t member_pos = 0;
    std::vector<std::string> tracked;
  };
  // Per cohort, over its members, per resource: what they borrow (charged plus held above min)
  // and what they can lend (their idle min, capped by lendingLimit). Derived (not in snapshots):
  // rebuilt by Reindex and Recount, moved by Charge, Release, Reserve and Unreserve, so that an
  // admission checks its cohort in O(1) rather than O(members) (CheckElastic, ShortOf).
  struct CohortSums {
    ResourceList borrowed, lendable;
  };
  std::vector<RQ>& rqs() { return rqs_; }
  std::vector<EQ>& eqs() { return eqs_; }
  std::map<uint64_t, ResourceList>& reservations() { return reservations_; }
  std::map<uint64_t, std::vector<RqHold>>& rq_reservations() { return rq_reservations_; }
  std::map<std::string, ResourceList>& cohort_allowance() { return cohort_allowance_; }
  struct Counted {  // what a terminal pod's count/pods charge depends on (scopes)
    std::string namespace_;
    std::string priority_class;
    ResourceList requests, limits;
    bool terminating = false;  // had spec.activeDeadlineSeconds (Terminating scope)
  };
  std::map<uint64_t, Counted>& counted() { return counted_; }
  void Reindex();

 private:
  bool ScopeMatches(const ResourceQuota& q, const Workload& w) const;
  int64_t ChargeOf(const QuotaItem& item, const Workload& w) const;
  std::vector<const EQ*> CohortMembers(const std::string& cohort) const;
  static ResourceQuotaUsage UsageOf(const RQ& rq);
  ElasticQuotaUsage UsageWithoutLent(const EQ& e) const;
  // What a check of `w` takes off the usage of each member of `self`'s cohort (by position in
  // self.members): w's own hold and the tracked part of `released` there. Empty when nothing is.
  std::vector<ResourceList> Gone(const EQ& self, const Workload& w,
                                 const std::vector<const Workload*>& released) const;
  void Allow();  // allowances from the current usage (after a change)
  void RebuildSums();
  // Adds (sign +1) or takes off (-1) `part` to member `e`'s `field` (used or reserved), its
  // cohort's sums moved with it: e's counts of the resources `part` names taken off, the change
  // made, the counts added back.
  void Move(EQ& e, ResourceList EQ::*field, const ResourceList& part, int sign);
  std::map<std::string, CohortSums> FreshSums() const;
  const CohortSums* SumsOf(const EQ& e) const;  // e's cohort's; null outside one
  std::optional<std::string> CheckSums() const;

  std::vector<RQ> rqs_;
  std::map<std::string, std::vector<size_t>> rq_by_ns_;
  std::vector<EQ> eqs_;
  std::map<std::string, size_t> eq_index_;  // namespace -> eqs_ index
  std::map<uint64_t, ResourceList>
      reservations_;  // workload id -> reserved requests (ElasticQuota)
  std::map<uint64_t, std::vector<RqHold>> rq_reservations_;  // workload id -> ResourceQuota holds
  std::map<std::string, ResourceList> cohort_allowance_;  // cohort -> usage allowed above total min
  // Derived by Reindex (not in snapshots): what each cohort lends (CohortLendable of its members,
  // the fair-share denominators), by cohort name ("": the quotas in no cohort).
  std::map<std::string, ResourceList> lendable_;
  std::map<std::string, CohortSums> sums_;  // by cohort (CohortSums)
  std::map<uint64_t, Counted>
      counted_;  // terminal pods still counted by count/pods, by workload id
  void ChargeCounted(const Counted& c, int64_t sign);
};

}  // namespace arbiter::engine
