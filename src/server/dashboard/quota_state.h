// Each namespace's ElasticQuota state now, from the engine: what it uses, its min and max, what
// it borrows from its cohort and what it lends to it, and its fair share. Pure.
//
//   used      requests of its running and terminating workloads (what the quota book charges)
//   borrowed  per tracked resource, max(0, used - min)
//   lent      the cohort's borrowed amount of a resource, attributed to the members with idle
//             lendable min (min - used, capped by lendingLimit) in proportion to that idle amount
//             (largest remainder, ties by namespace name); at most their idle amount
//   fairShare the engine's weighted dominant-resource share (core/engine/fair_share.h), in
//             millionths; 0 outside a cohort
// Tracked resources are those the ElasticQuota names in min or max.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/resources.h"
#include "server/cluster.h"

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

}  // namespace arbiter::server::dashboard
