#include "core/engine/fair_share.h"

#include <algorithm>
#include <string>

#include "core/int128.h"

namespace arbiter::engine {

ResourceList CohortLendable(const std::vector<const ElasticQuota*>& members) {
  ResourceList out;
  for (const ElasticQuota* q : members)
    for (const auto& [r, v] : q->min.entries()) {
      const bool limited = std::find(q->lending_limit_set.begin(), q->lending_limit_set.end(), r) !=
                           q->lending_limit_set.end();
      out.Set(r, out.Get(r) + (limited ? std::min(v, q->lending_limit.Get(r)) : v));
    }
  return out;
}

int64_t WeightedShare(const ElasticQuota& q, const ResourceList& used,
                      const ResourceList& lendable) {
  int64_t dominant = 0;
  bool borrowing = false;
  for (const auto& [r, u] : used.entries()) {
    if (!q.min.Has(r) && !(q.max && q.max->Has(r))) continue;
    const int64_t borrowed = u - q.min.Get(r);
    if (borrowed <= 0) continue;
    borrowing = true;
    const int64_t cap = lendable.Get(r);
    if (cap <= 0) return kInfiniteShare;  // borrowing what nobody lends (after a runtime change)
    dominant = std::max<int64_t>(
        dominant, static_cast<int64_t>(std::min<int128>(
                      static_cast<int128>(borrowed) * kShareOne / cap, kInfiniteShare - 1)));
  }
  if (!borrowing) return 0;
  const int64_t weight = q.fair_weight_milli.value_or(1000);
  if (weight == 0) return kInfiniteShare;
  return static_cast<int64_t>(
      std::min<int128>(static_cast<int128>(dominant) * 1000 / weight, kInfiniteShare - 1));
}

std::string FormatShare(int64_t share) {
  if (share == kInfiniteShare) return "inf";
  std::string frac = std::to_string(share % kShareOne);
  frac.insert(0, 6 - frac.size(), '0');
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return std::to_string(share / kShareOne) + (frac.empty() ? "" : "." + frac);
}

}  // namespace arbiter::engine
