// Fair sharing within a cohort (Kueue's fair sharing, with ElasticQuota's names): a namespace's
// weighted dominant-resource share (DRF) of what the cohort lends.
//
//   share(ns) = max over its tracked resources r of  borrowed_r / lendable_r,  divided by weight
//
// where borrowed_r = max(0, used_r - min_r) and lendable_r is what the cohort can lend of r (the
// sum over its members of min_r, or lendingLimit_r where set). A namespace within its min has
// share 0; weight 0 while borrowing is an infinite share (kInfiniteShare). Shares are integers in
// millionths (1.0 = 1,000,000) before the weight, so orders are exact and deterministic.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "core/objects.h"

namespace arbiter::engine {

inline constexpr int64_t kShareOne = 1'000'000;
inline constexpr int64_t kInfiniteShare = std::numeric_limits<int64_t>::max();

// What the cohort of `members` can lend, per resource.
ResourceList CohortLendable(const std::vector<const ElasticQuota*>& members);
// The weighted share of `q`'s namespace using `used` (its tracked usage); weight 1 when the
// ElasticQuota has no spec.fairSharing.
int64_t WeightedShare(const ElasticQuota& q, const ResourceList& used,
                      const ResourceList& lendable);
// "0.25", "inf": a share as a decimal (6 places, trailing zeros trimmed).
std::string FormatShare(int64_t share);

}  // namespace arbiter::engine
