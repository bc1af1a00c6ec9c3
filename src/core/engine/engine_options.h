// How an Engine is built (part of its snapshots).
#pragma once

#include <cstdint>
#include <optional>

#include "core/objects.h"
#include "core/placement/policy.h"

namespace arbiter::engine {

struct EngineOptions {
  uint64_t seed = 0;              // seeded policies (Random placement)
  bool check_invariants = false;  // check after every command; a violation aborts (CHECK)
  // Placement override (`arbiter sim --policy`): wins over any PoolPolicy, now or later.
  std::optional<PlacementPolicyName> placement;
  // What FGD knows of the workload as a whole: its typical pod shapes (drivers that know their
  // pods in advance pass them; a daemon may pass none).
  placement::WorkloadProfile placement_profile;
  int fgd_popularity_percent = 95;  // FGD's typical pods: the shapes covering this share
  // Random placement's stream (placement::RandomPolicy): the trace replay's (a score per feasible
  // node, then the winner's devices drawn anew) instead of the manifests' (one draw per node).
  bool random_rescore_winner = false;
};

}  // namespace arbiter::engine
