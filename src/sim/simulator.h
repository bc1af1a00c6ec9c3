// Drives the engine under a virtual clock with the Pods' simulation annotations.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "core/engine/engine.h"
#include "core/objects.h"

namespace arbiter::sim {

// Simulations cover at most about ten years of virtual time (hourly billing rows stay bounded).
inline constexpr Millis kMaxHorizon = Millis{87600} * 3600 * 1000;

struct SimOptions {
  std::optional<Millis> until;  // stop the clock here; default: when nothing is left to happen
  uint64_t seed = 0;
  bool check_invariants = false;
  std::optional<PlacementPolicyName> placement;
  // Called with the virtual time now and then (progress output); may be empty.
  std::function<void(Millis now, size_t submitted, size_t total)> progress;
};

struct SimResult {
  std::unique_ptr<engine::Engine> engine;
  Millis end_time = 0;
};

// When a node is in the pool of a run that ends at `end`: from its arbiter.dev/add-time to its
// remove-time (or the end). Empty (from >= to) when it never joined before the end.
struct NodeWindow {
  Millis from = 0;
  Millis to = 0;
};
NodeWindow NodeWindowOf(const Node& node, Millis end);
// Whether the node is in the pool at instant t (joined at or before t, not yet removed).
bool NodePresentAt(const Node& node, Millis t);

// Runs the pods of `manifests` on its pool. `manifests` must outlive the result.
Result<SimResult> RunSimulation(const ManifestSet& manifests, const SimOptions& options);

}  // namespace arbiter::sim
