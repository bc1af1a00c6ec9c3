#include "sim/fair_share_report.h"

#include <algorithm>
#include <map>
#include <vector>

#include "core/engine/fair_share.h"
#include "core/int128.h"

namespace arbiter::sim {

std::vector<FairShareSummary> SummariseFairShares(const ManifestSet& m,
                                                  const driver::SimResult& r) {
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
    std::map<std::string, size_t, std::less<>> index;
    for (size_t i = 0; i < members.size(); ++i) index[members[i]->meta.namespace_] = i;
    // Usage changes: +requests at a run's start, -requests at its end; per instant the ends
    // first, then the starts, each in run order (a sorted vector, not a map of a million
    // instants).
    struct Change {
      Millis t;
      bool start;
      size_t member;
      const ResourceList* req;
    };
    std::vector<Change> changes;
    for (const auto& run : r.runs()) {
      const driver::SimWorkload& w = r.workloads()[engine::Value(run.workload)];
      auto it = index.find(w.namespace_);
      if (it == index.end() || run.end <= run.start) continue;
      changes.push_back({run.start, true, it->second, &w.requests});
      changes.push_back({run.end, false, it->second, &w.requests});
    }
    std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
      return a.t != b.t ? a.t < b.t : !a.start && b.start;
    });
    std::vector<ResourceList> used(members.size());
    std::vector<FairShareSummary> rows(members.size());
    std::vector<int128> integral(members.size(), 0);
    std::vector<int64_t> share(members.size(), 0);
    for (size_t i = 0; i < members.size(); ++i) {
      rows[i].namespace_ = members[i]->meta.namespace_;
      rows[i].cohort = cohort;
      rows[i].weight_milli = members[i]->fair_weight_milli.value_or(1000);
    }
    Millis last = 0;
    for (size_t c = 0; c < changes.size();) {
      const Millis t = changes[c].t;
      const Millis until = std::min(t, r.end_time);
      for (size_t i = 0; i < members.size() && until > last; ++i)
        integral[i] += static_cast<int128>(share[i]) * (until - last);
      last = std::max(last, until);
      for (; c < changes.size() && changes[c].t == t; ++c) {
        if (changes[c].start)
          used[changes[c].member] += *changes[c].req;
        else
          used[changes[c].member] -= *changes[c].req;
      }
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
