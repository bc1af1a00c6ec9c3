// Each namespace's quota state now, as the engine answers it (engine::Engine::namespace_usages and
// elastic_quota_usages; core/engine/types.h says what each number means): what its running and
// terminating workloads request, and for a namespace with an ElasticQuota its min and max, what
// it borrows from its cohort and lends to it, and its fair share (millionths, 0 outside a
// cohort). Nothing here is re-derived. Pure.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/resources.h"
#include "server/state/cluster.h"

namespace arbiter::server::dashboard {

struct QuotaState {
  std::string quota;   // the ElasticQuota's name, "" without one
  std::string cohort;  // "" outside a cohort
  ResourceList used;   // every resource its running workloads request
  ResourceList min;
  std::optional<ResourceList> max;
  ResourceList borrowed;
  ResourceList lent;
  int64_t fair_share = 0;  // millionths (engine::kShareOne); engine::kInfiniteShare possible
  bool operator==(const QuotaState& o) const = default;
};

// By namespace: every namespace with running workloads or an ElasticQuota.
std::map<std::string, QuotaState> QuotaStates(const engine::Engine& e);
// The same for the namespaces with an ElasticQuota, `used` left empty (/metrics sums it from its
// live rows, off the lock).
std::map<std::string, QuotaState> ElasticQuotaStates(const engine::Engine& e);

}  // namespace arbiter::server::dashboard
