// Placement scoring policies, one per file, behind one interface (chosen by PoolPolicy
// placement.policy or `--policy`). The caller filters nodes (selectors, fit), asks the policy to
// score each feasible node, and takes the highest score; ties go to the lowest node index, and
// callers keep nodes sorted by name, so the final tie-break is the node name.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/objects.h"
#include "core/placement/node_state.h"

namespace arbiter::placement {

struct Candidate {
  int64_t score = 0;  // higher is better
  GpuAssignment gpus;
};

// What the policy may know of the workload as a whole (FGD uses the typical pod shapes).
struct WorkloadProfile {
  struct Entry {
    PodShape shape;
    int64_t weight = 1;  // how many pods of this shape (popularity)
  };
  std::vector<Entry> shapes;
};

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string_view name() const = 0;
  // Scores placing `pod` on `node`; precondition: node.Fits(pod). Chooses the GPU devices.
  virtual Candidate Score(const NodeState& node, const PodShape& pod) = 0;
  // Score(node, pod).score without building the GPU assignment (cheaper; for loops that score
  // many nodes and ask Score() only of the winner). Same value as Score() for deterministic
  // policies; Random draws anew on every call.
  virtual int64_t ScoreOnly(const NodeState& node, const PodShape& pod) { return Score(node, pod).score; }
  // Told after node `index` changed (allocation or release); policies with caches update here.
  virtual void OnNodeChanged(const NodeState& /*node*/, size_t /*index*/) {}
  // Told the full node list once before use, and again if nodes are added or removed.
  virtual void Reset(const std::vector<NodeState>& /*nodes*/) {}
};

std::unique_ptr<PlacementPolicy> MakePlacementPolicy(PlacementPolicyName name, uint64_t seed,
                                                     const WorkloadProfile& profile);

// Picks the best feasible node among `nodes` (indices into `all`) for `pod`; returns the index
// and the candidate, or nothing when none fits.
struct Choice {
  size_t node_index = 0;
  Candidate candidate;
};
std::optional<Choice> ChooseNode(PlacementPolicy& policy, const std::vector<NodeState>& all,
                                 const std::vector<size_t>& feasible, const PodShape& pod);

}  // namespace arbiter::placement
