#include "server/dashboard/quota_state.h"

#include <algorithm>
#include <vector>

#include "core/engine/fair_share.h"
#include "core/int128.h"

namespace arbiter::server::dashboard {

namespace {

bool Tracks(const ElasticQuota& q, const std::string& r) {
  return q.min.Has(r) || (q.max && q.max->Has(r));
}

// What `q` may lend of `r` while using `used`: its idle min, capped by its lendingLimit.
int64_t IdleLendable(const ElasticQuota& q, const std::string& r, int64_t used) {
  int64_t idle = std::max<int64_t>(0, q.min.Get(r) - used);
  if (std::find(q.lending_limit_set.begin(), q.lending_limit_set.end(), r) !=
      q.lending_limit_set.end())
    idle = std::min(idle, q.lending_limit.Get(r));
  return idle;
}

// Splits `total` (<= sum of `weights`) in proportion to `weights`: floors, then one more to the
// largest remainders, earlier index first on ties.
std::vector<int64_t> Apportion(int64_t total, const std::vector<int64_t>& weights) {
  int128 sum = 0;
  for (int64_t w : weights) sum += w;
  std::vector<int64_t> out(weights.size(), 0);
  if (sum <= 0 || total <= 0) return out;
  std::vector<std::pair<int128, size_t>> rem;
  int64_t given = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const int128 x = static_cast<int128>(total) * weights[i];
    out[i] = static_cast<int64_t>(x / sum);
    given += out[i];
    rem.push_back({x % sum, i});
  }
  std::stable_sort(rem.begin(), rem.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (size_t k = 0; given < total && k < rem.size(); ++k, ++given) ++out[rem[k].second];
  return out;
}

}  // namespace

std::map<std::string, QuotaState> QuotaStates(const engine::Engine& e) {
  std::map<std::string, QuotaState> out;
  for (const engine::WorkloadStatus& w : e.Workloads())
    if (w.phase == engine::Phase::kRunning || w.phase == engine::Phase::kTerminating)
      out[w.namespace_].used += w.requests;
  const std::vector<ElasticQuota> quotas = e.elastic_quotas();
  std::map<std::string, std::vector<const ElasticQuota*>> cohorts;  // members by namespace
  for (const ElasticQuota& q : quotas) {
    QuotaState& s = out[q.meta.namespace_];
    s.quota = q.meta.name;
    s.cohort = q.cohort;
    s.min = q.min;
    s.max = q.max;
    for (const auto& [r, u] : s.used.entries())
      if (Tracks(q, r) && u > q.min.Get(r)) s.borrowed.Set(r, u - q.min.Get(r));
    if (!q.cohort.empty()) cohorts[q.cohort].push_back(&q);
  }
  for (auto& [cohort, members] : cohorts) {
    std::sort(members.begin(), members.end(), [](const ElasticQuota* a, const ElasticQuota* b) {
      return a->meta.namespace_ < b->meta.namespace_;
    });
    const ResourceList lendable = engine::CohortLendable(members);
    ResourceList borrowed;  // the cohort's, per resource
    for (const ElasticQuota* q : members) {
      QuotaState& s = out[q->meta.namespace_];
      borrowed += s.borrowed;
      s.fair_share = engine::WeightedShare(*q, s.used, lendable);
    }
    for (const auto& [r, total] : borrowed.entries()) {
      std::vector<int64_t> idle;
      int64_t idle_sum = 0;
      for (const ElasticQuota* q : members) {
        idle.push_back(IdleLendable(*q, r, out[q->meta.namespace_].used.Get(r)));
        idle_sum += idle.back();
      }
      const std::vector<int64_t> lent = Apportion(std::min(total, idle_sum), idle);
      for (size_t i = 0; i < members.size(); ++i)
        if (lent[i] > 0) out[members[i]->meta.namespace_].lent.Set(r, lent[i]);
    }
  }
  return out;
}

}  // namespace arbiter::server::dashboard
