#include "server/state/quota_status.h"

#include "core/resources.h"

namespace arbiter::server {

nlohmann::json QuotaStatus(const engine::ResourceQuotaUsage& usage) {
  nlohmann::json hard = nlohmann::json::object(), used = nlohmann::json::object();
  for (const auto& item : usage.items) {
    hard[item.key] = FormatResourceQuantity(item.resource, item.hard);
    used[item.key] = FormatResourceQuantity(item.resource, item.used);
  }
  return {{"hard", hard}, {"used", used}};
}

}  // namespace arbiter::server
