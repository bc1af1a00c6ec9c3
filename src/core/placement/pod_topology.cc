#include "core/placement/pod_topology.h"

#include <algorithm>
#include <cmath>

#include "core/placement/node_constraints.h"

namespace arbiter::placement {

bool TermSelects(const PodAffinityTerm& t, const std::string& owner_ns, const std::string& pod_ns,
                 const Labels& pod_labels, const Labels* ns_labels) {
  if (!t.label_selector) return false;
  bool ns_ok;
  if (t.namespaces.empty() && !t.namespace_selector) {
    ns_ok = pod_ns == owner_ns;
  } else {
    ns_ok = std::find(t.namespaces.begin(), t.namespaces.end(), pod_ns) != t.namespaces.end();
    if (!ns_ok && t.namespace_selector) {
      static const Labels kNone;
      ns_ok = t.namespace_selector->Matches(ns_labels ? *ns_labels : kNone);
    }
  }
  return ns_ok && t.label_selector->Matches(pod_labels);
}

bool SpreadSelects(const TopologySpreadConstraint& c, const std::string& owner_ns,
                   const std::string& pod_ns, const Labels& pod_labels) {
  return c.label_selector && pod_ns == owner_ns && c.label_selector->Matches(pod_labels);
}

int64_t SpreadWeightMilli(size_t domains) {
  // The only floating point in scoring: a logarithm, rounded once to an integer.
  return std::llround(1000.0 * std::log(static_cast<double>(domains) + 2.0));
}

int64_t SpreadScoreMilli(int64_t count, int32_t max_skew, int64_t weight_milli) {
  return count * weight_milli + 1000 * (int64_t{max_skew} - 1);
}

void NormalizeSpreadScores(std::vector<int64_t>& scores, const std::vector<char>& ignored) {
  int64_t lo = 0, hi = 0;
  bool any = false;
  for (size_t i = 0; i < scores.size(); ++i) {
    scores[i] = (scores[i] + 500) / 1000;  // math.Round of a non-negative score
    if (ignored[i]) continue;
    lo = any ? std::min(lo, scores[i]) : scores[i];
    hi = any ? std::max(hi, scores[i]) : scores[i];
    any = true;
  }
  for (size_t i = 0; i < scores.size(); ++i) {
    if (ignored[i])
      scores[i] = 0;
    else if (hi == 0)
      scores[i] = kMaxNodeScore;
    else
      scores[i] = kMaxNodeScore * (hi + lo - scores[i]) / hi;
  }
}

void NormalizeAffinityScores(std::vector<int64_t>& scores) {
  if (scores.empty()) return;
  const auto [lo_it, hi_it] = std::minmax_element(scores.begin(), scores.end());
  const int64_t lo = *lo_it, span = *hi_it - *lo_it;
  for (auto& s : scores) s = span > 0 ? kMaxNodeScore * (s - lo) / span : 0;
}

}  // namespace arbiter::placement
