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

// Runs the pods of `manifests` on its pool. `manifests` must outlive the result.
Result<SimResult> RunSimulation(const ManifestSet& manifests, const SimOptions& options);

}  // namespace arbiter::sim
