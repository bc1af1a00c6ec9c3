// The report's fair shares (summary.fairShares): each cohort namespace's weighted dominant-resource
// share of what its cohort lends (core/engine/fair_share.h), over the run, from the run records.
#pragma once

#include <string>
#include <vector>

#include "core/objects.h"
#include "driver/recorder.h"

namespace arbiter::sim {

struct FairShareSummary {
  std::string namespace_;
  std::string cohort;
  int64_t weight_milli = 1000;
  int64_t max_share = 0;    // millionths (engine::kShareOne), engine::kInfiniteShare possible
  Millis max_share_at = 0;  // the first instant it was reached
  int64_t mean_share = 0;   // time-weighted over [0, end], millionths (infinite spans count as max)
  int64_t final_share = 0;  // at the end of the run
};

// One entry per ElasticQuota in a cohort, by cohort then namespace; empty without cohorts.
std::vector<FairShareSummary> SummariseFairShares(const ManifestSet& m, const driver::SimResult& r);

}  // namespace arbiter::sim
