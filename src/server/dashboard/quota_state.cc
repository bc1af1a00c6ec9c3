#include "server/dashboard/quota_state.h"

namespace arbiter::server::dashboard {

std::map<std::string, QuotaState> QuotaStates(const engine::Engine& e) {
  std::map<std::string, QuotaState> out = ElasticQuotaStates(e);
  for (auto& [ns, used] : e.namespace_usages()) out[ns].used = std::move(used);
  return out;
}

std::map<std::string, QuotaState> ElasticQuotaStates(const engine::Engine& e) {
  std::map<std::string, QuotaState> out;
  for (engine::ElasticQuotaUsage& u : e.elastic_quota_usages()) {
    QuotaState& s = out[u.namespace_];
    s.quota = std::move(u.name);
    s.cohort = std::move(u.cohort);
    s.min = std::move(u.min);
    s.max = std::move(u.max);
    s.borrowed = std::move(u.borrowed);
    s.lent = std::move(u.lent);
    s.fair_share = u.fair_share;
  }
  return out;
}

}  // namespace arbiter::server::dashboard
