#include "sim/fair_share_report.h"

#include <algorithm>
#include <map>

#include "core/engine/fair_share.h"
#include "core/int128.h"

namespace arbiter::sim {

std::vector<FairShareSummary> SummariseFairShares(const ManifestSet& m, const SimResult& r) {
  std::vector<FairShareSummary> out;
  std::map<std::string, std::vector<const ElasticQuota*>> cohorts;
  (void)m;
  for (const auto& q : r.elastic_quotas)
    if (!q.cohort.empty()) cohorts[q.cohort].push_back(&q);
  for (auto& [cohort, members] : cohorts) {
    std::sort(members.begin(), members.end(), [](const ElasticQuota* a, const ElasticQuota* b) {
      return a->meta.namespace_ < b->meta.namespace_;
    });
    const ResourceList lendable = engine::CohortLendable(members);
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < members.size(); ++i) index[members[i]->meta.namespace_] = i;
    // Usage changes: +requests at a run's start, -requests at its end.
    std::map<Millis, std::vector<std::pair<size_t, const ResourceList*>>> starts, ends;
    for (const auto& run : r.runs()) {
      const SimWorkload& w = r.workloads()[engine::Value(run.workload)];
      auto it = index.find(w.namespace_);
      if (it == index.end() || run.end <= run.start) continue;
      starts[run.start].push_back({it->second, &w.requests});
      ends[run.end].push_back({it->second, &w.requests});
    }
    std::vector<ResourceList> used(members.size());
    std::vector<FairShareSummary> rows(members.size());
    std::vector<int128> integral(members.size(), 0);
    std::vector<int64_t> share(members.size(), 0);
    for (size_t i = 0; i < members.size(); ++i) {
      rows[i].namespace_ = members[i]->meta.namespace_;
      rows[i].cohort = cohort;
      rows[i].weight_milli = members[i]->fair_weight_milli.value_or(1000);
    }
    std::vector<Millis> instants;
    for (const auto& [t, v] : starts) instants.push_back(t);
    for (const auto& [t, v] : ends) instants.push_back(t);
    std::sort(instants.begin(), instants.end());
    instants.erase(std::unique(instants.begin(), instants.end()), instants.end());
    Millis last = 0;
    for (Millis t : instants) {
      const Millis until = std::min(t, r.end_time);
      for (size_t i = 0; i < members.size() && until > last; ++i)
        integral[i] += static_cast<int128>(share[i]) * (until - last);
      last = std::max(last, until);
      if (auto e = ends.find(t); e != ends.end())
        for (const auto& [i, req] : e->second) used[i] -= *req;
      if (auto s = starts.find(t); s != starts.end())
        for (const auto& [i, req] : s->second) used[i] += *req;
      for (size_t i = 0; i < members.size(); ++i) {
        share[i] = engine::WeightedShare(*members[i], used[i], lendable);
        if (share[i] > rows[i].max_share && t <= r.end_time) {
          rows[i].max_share = share[i];
          rows[i].max_share_at = t;
        }
      }
    }
    for (size_t i = 0; i < members.size(); ++i) {
      if (r.end_time > last) integral[i] += static_cast<int128>(share[i]) * (r.end_time - last);
      rows[i].final_share = share[i];
      rows[i].mean_share = r.end_time > 0 ? static_cast<int64_t>(std::min<int128>(
                                                integral[i] / r.end_time, engine::kInfiniteShare))
                                          : share[i];
      out.push_back(rows[i]);
    }
  }
  return out;
}

}  // namespace arbiter::sim
