// Quota accounting for admission: Kubernetes ResourceQuota (hard limits per namespace, with
// PriorityClass scopes) and Arbiter ElasticQuota (min guaranteed, max ceiling, lending inside a
// cohort). Pure bookkeeping: charge on admission, release on exit.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/engine/admission.h"
#include "core/engine/types.h"
#include "core/objects.h"

namespace arbiter::engine {

class QuotaBook {
 public:
  void Configure(const std::vector<ResourceQuota>& quotas, const std::vector<ElasticQuota>& eqs);

  // A reason the workload can never be admitted under a ResourceQuota: a container that does not
  // set a cpu/memory request or limit a matching quota tracks (Kubernetes' "must specify",
  // checked for every quota first), or a request larger than the hard limit itself.
  std::optional<std::string> NeverAdmissible(const Workload& w, const AdmittedPod& pod) const;
  // ResourceQuota check against current usage; the message names quota, resource, requested,
  // used and hard.
  std::optional<std::string> ResourceQuotaBlocked(const Workload& w) const;

  struct ElasticResult {
    bool ok = true;
    bool borrowing = false;    // admission would put the namespace above its min
    bool over_max = false;     // blocked by the namespace's own max: no reclaim can help
    bool within_min = false;   // the namespace would stay within its min (may reclaim)
    std::string message;       // why blocked
  };
  // `released` lists workloads whose usage should be treated as already gone (reclaim planning).
  ElasticResult CheckElastic(const Workload& w, const std::vector<const Workload*>& released = {}) const;
  bool HasElastic(const std::string& ns) const { return eq_index_.count(ns) > 0; }
  bool HasAnyQuota(const std::string& ns) const { return eq_index_.count(ns) > 0 || rq_by_ns_.count(ns) > 0; }
  const std::string* CohortOf(const std::string& ns) const;
  // True when the namespace's usage is above its min in any resource.
  bool IsBorrowing(const std::string& ns) const;

  // Holds `w`'s ElasticQuota share while the workloads reclaimed for it exit, so that nobody
  // else (a requeued victim of higher priority, say) borrows it back in the meantime.
  void Reserve(const Workload& w);
  void Unreserve(const Workload& w);

  void Charge(const Workload& w);
  void Release(const Workload& w);

  // Invariant helpers.
  std::optional<std::string> CheckInvariants() const;

 private:
  struct RQ {
    const ResourceQuota* q;
    std::map<std::string, int64_t> used;      // key -> used
    std::map<std::string, int64_t> reserved;  // key -> held for preemptors waiting for victims
  };
  struct EQ {
    const ElasticQuota* q;
    ResourceList used;
    ResourceList reserved;
  };
  bool ScopeMatches(const ResourceQuota& q, const Workload& w) const;
  int64_t ChargeOf(const QuotaItem& item, const Workload& w) const;
  std::vector<const EQ*> CohortMembers(const std::string& cohort) const;

  std::vector<RQ> rqs_;
  std::map<std::string, std::vector<size_t>> rq_by_ns_;
  std::vector<EQ> eqs_;
  std::map<std::string, size_t> eq_index_;  // namespace -> eqs_ index
  std::map<size_t, ResourceList> reservations_;  // workload id -> reserved requests (ElasticQuota)
  struct RqHold {
    size_t rq;
    std::string key;
    int64_t amount;
  };
  std::map<size_t, std::vector<RqHold>> rq_reservations_;  // workload id -> ResourceQuota holds
};

}  // namespace arbiter::engine
