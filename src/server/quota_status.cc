#include "server/quota_status.h"

#include <algorithm>

#include "core/resources.h"

namespace arbiter::server {

namespace {

bool ScopeSelects(const ResourceQuota& q, const engine::WorkloadStatus& w) {
  for (const auto& s : q.scope_selector) {
    if (s.scope_name != "PriorityClass") continue;
    const bool has = !w.priority_class.empty();
    const bool in = std::find(s.values.begin(), s.values.end(), w.priority_class) != s.values.end();
    if (!SelectorOperatorHolds(s.op, has, in)) return false;
  }
  return true;
}

int64_t Charge(const QuotaItem& item, const engine::WorkloadStatus& w) {
  switch (item.track) {
    case QuotaTrack::kCount:
      return 1;
    case QuotaTrack::kRequests:
      return w.requests.Get(item.resource);
    case QuotaTrack::kLimits: {
      auto info = ClassifyResource(item.resource);
      const bool extended =
          info.ok() && (info->kind == ResourceKind::kGpu || info->kind == ResourceKind::kMig ||
                        info->kind == ResourceKind::kExtended);
      return extended ? w.requests.Get(item.resource) : w.limits.Get(item.resource);
    }
  }
  return 0;
}

}  // namespace

nlohmann::json QuotaStatus(const ResourceQuota& q,
                           const std::vector<engine::WorkloadStatus>& holding) {
  nlohmann::json hard = nlohmann::json::object(), used = nlohmann::json::object();
  for (const auto& item : q.hard) {
    int64_t sum = 0;
    for (const auto& w : holding)
      if (ScopeSelects(q, w)) sum += Charge(item, w);
    const std::string resource = item.track == QuotaTrack::kCount ? "pods" : item.resource;
    hard[item.key] = FormatResourceQuantity(resource, item.hard);
    used[item.key] = FormatResourceQuantity(resource, sum);
  }
  return {{"hard", hard}, {"used", used}};
}

}  // namespace arbiter::server
