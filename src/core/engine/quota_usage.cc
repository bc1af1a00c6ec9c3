// Quota usage as the engine charges it (engine.h: resource_quota_usages, elastic_quota_usages,
// namespace_usages; types.h states what each number means). The adapters (serve's object status,
// /metrics, the dashboard) show these numbers; they never re-derive them.
#include <algorithm>

#include "core/engine/engine.h"
#include "core/engine/fair_share.h"
#include "core/engine/quota_book.h"
#include "core/engine/state.h"
#include "core/int128.h"

namespace arbiter::engine {

namespace {

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

// Usage under flavor keys ("nvidia.com/gpu@h100") summed back to the plain resource.
ResourceList Unflavored(const ResourceList& used) {
  ResourceList out;
  for (const auto& [r, v] : used.entries()) {
    const std::string base = FlavorBase(r);
    out.Set(base, out.Get(base) + v);
  }
  return out;
}

// Attributes each resource the cohort `members` (indices into `out`) borrows to the members with
// idle lendable min (ElasticQuotaUsage::lent).
void AttributeLent(std::vector<ElasticQuotaUsage>& out, const std::vector<size_t>& members,
                   const std::vector<ElasticQuota>& quotas) {
  ResourceList borrowed;  // the cohort's, per resource
  for (size_t i : members) borrowed += out[i].borrowed;
  for (const auto& [r, total] : borrowed.entries()) {
    std::vector<int64_t> idle;
    int64_t idle_sum = 0;
    for (size_t i : members) {
      idle.push_back(IdleLendable(quotas[i], r, out[i].used.Get(r)));
      idle_sum += idle.back();
    }
    const std::vector<int64_t> lent = Apportion(std::min(total, idle_sum), idle);
    for (size_t k = 0; k < members.size(); ++k)
      if (lent[k] > 0) out[members[k]].lent.Set(r, lent[k]);
  }
}

}  // namespace

ResourceQuotaUsage QuotaBook::UsageOf(const RQ& rq) {
  ResourceQuotaUsage u{rq.q.meta.namespace_, rq.q.meta.name, {}};
  for (const QuotaItem& item : rq.q.hard) {
    auto used = rq.used.find(item.key);
    u.items.push_back({item.key, item.track,
                       item.track == QuotaTrack::kCount ? std::string("pods") : item.resource,
                       item.hard, used == rq.used.end() ? 0 : used->second});
  }
  return u;
}

std::vector<ResourceQuotaUsage> QuotaBook::ResourceQuotaUsages() const {
  std::vector<ResourceQuotaUsage> out;
  out.reserve(rqs_.size());
  for (const RQ& rq : rqs_) out.push_back(UsageOf(rq));
  return out;
}

std::vector<ResourceQuotaUsage> QuotaBook::ResourceQuotaUsagesOf(const std::string& ns) const {
  std::vector<ResourceQuotaUsage> out;
  if (auto it = rq_by_ns_.find(ns); it != rq_by_ns_.end())
    for (size_t i : it->second) out.push_back(UsageOf(rqs_[i]));  // (indices ascending)
  return out;
}

ElasticQuotaUsage QuotaBook::UsageWithoutLent(const EQ& e) const {
  ElasticQuotaUsage u{
      e.q.meta.namespace_, e.q.meta.name, e.q.cohort, e.q.min, e.q.max, {}, {}, {}, 0};
  u.used = Unflavored(e.used);
  for (const auto& [r, v] : u.used.entries())
    if ((u.min.Has(r) || (u.max && u.max->Has(r))) && v > u.min.Get(r))
      u.borrowed.Set(r, v - u.min.Get(r));
  if (!e.x.cohort.empty()) u.fair_share = WeightedShare(e.x, e.used, LendableOf(e.x.cohort));
  return u;
}

std::optional<ElasticQuotaUsage> QuotaBook::ElasticQuotaUsageWithoutLent(
    const std::string& ns) const {
  auto it = eq_index_.find(ns);
  if (it == eq_index_.end()) return std::nullopt;
  return UsageWithoutLent(eqs_[it->second]);
}

std::vector<ElasticQuotaUsage> QuotaBook::ElasticQuotaUsages() const {
  std::vector<ElasticQuotaUsage> out;
  std::vector<ElasticQuota> plain;  // as set (flavors not expanded), parallel to `out`
  for (const EQ& e : eqs_) {
    out.push_back(UsageWithoutLent(e));
    plain.push_back(e.q);
  }
  std::map<std::string, std::vector<size_t>> cohorts;  // members, by namespace
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i].cohort.empty()) cohorts[out[i].cohort].push_back(i);
  for (auto& [cohort, members] : cohorts) {
    std::sort(members.begin(), members.end(),
              [&](size_t a, size_t b) { return out[a].namespace_ < out[b].namespace_; });
    AttributeLent(out, members, plain);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.namespace_ < b.namespace_; });
  return out;
}

std::vector<ResourceQuotaUsage> Engine::resource_quota_usages() const {
  return s_->quota.ResourceQuotaUsages();
}

std::vector<ElasticQuotaUsage> Engine::elastic_quota_usages() const {
  return s_->quota.ElasticQuotaUsages();
}

std::vector<ResourceQuotaUsage> Engine::resource_quota_usages(const std::string& ns) const {
  return s_->quota.ResourceQuotaUsagesOf(ns);
}

std::optional<ElasticQuotaUsage> Engine::elastic_quota_usage_without_lent(
    const std::string& ns) const {
  return s_->quota.ElasticQuotaUsageWithoutLent(ns);
}

std::map<std::string, ResourceList> Engine::namespace_usages() const {
  std::map<std::string, ResourceList> out;
  for (const auto& [id, slot] : s_->slot_of) {
    const Workload& w = s_->workloads[slot];
    if (w.node != kNoNode) out[w.namespace_] += w.requests;
  }
  return out;
}

}  // namespace arbiter::engine
