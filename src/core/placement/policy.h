// Placement scoring policies, one per file, behind one interface (chosen by PoolPolicy
// placement.policy or `--policy`). The caller filters nodes (selectors, fit), asks the policy to
// score each feasible node (ChooseNode), and takes the highest score; ties go to the lowest node
// index. The engine keeps nodes in its node order ((UpsertNode::order, name): by name for
// manifests, a seeded shuffle for trace replay), so the final tie-break is that order.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "core/objects.h"
#include "core/placement/node_state.h"

namespace arbiter::placement {

struct Candidate {
  int64_t score = 0;  // higher is better
  GpuAssignment gpus;
};

// The node a policy chose (ChooseNode).
struct Choice {
  size_t node_index = 0;
  Candidate candidate;
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
  virtual int64_t ScoreOnly(const NodeState& node, const PodShape& pod) {
    return Score(node, pod).score;
  }
  // Told after node `index` changed (allocation or release); policies with caches update here.
  virtual void OnNodeChanged(const NodeState& /*node*/, size_t /*index*/) {}
  // Told the full node list once before use, and again if nodes are added or removed.
  virtual void Reset(const std::vector<NodeState>& /*nodes*/) {}
  // State that is not derived from the nodes (Random's stream), for engine snapshots: a policy
  // built the same way and given LoadState(SaveState()) scores the same from then on. Caches
  // rebuilt by Reset are not part of it.
  virtual std::vector<uint64_t> SaveState() const { return {}; }
  virtual bool LoadState(const std::vector<uint64_t>& state) { return state.empty(); }
  // ChooseNode's rule (below). Policies override it only to score without a virtual call per
  // node (ChooseWith); the choice is the same.
  virtual std::optional<Choice> Choose(const std::vector<NodeState>& all,
                                       const std::vector<size_t>& feasible, const PodShape& pod);

 protected:
  // The rule, calling P::ScoreOnly directly (P a final policy class).
  template <typename P>
  static std::optional<Choice> ChooseWith(P& policy, const std::vector<NodeState>& all,
                                          const std::vector<size_t>& feasible,
                                          const PodShape& pod) {
    if (feasible.empty()) return std::nullopt;
    size_t best = feasible[0];
    int64_t best_score = policy.P::ScoreOnly(all[best], pod);
    for (size_t k = 1; k < feasible.size(); ++k) {
      const size_t i = feasible[k];
      const int64_t s = policy.P::ScoreOnly(all[i], pod);
      if (s > best_score || (s == best_score && i < best)) {
        best = i;
        best_score = s;
      }
    }
    return Choice{best, policy.P::Score(all[best], pod)};
  }
};

// `random_rescore_winner`: Random's trace-replay stream (see RandomPolicy).
std::unique_ptr<PlacementPolicy> MakePlacementPolicy(PlacementPolicyName name, uint64_t seed,
                                                     const WorkloadProfile& profile,
                                                     bool random_rescore_winner = false);

// Picks the best feasible node among `feasible` (indices into `all`, in the order they were
// found) for `pod`: the highest ScoreOnly, ties to the lowest index; then Score() of the winner
// gives its GPU devices. Returns nothing when `feasible` is empty.
inline std::optional<Choice> ChooseNode(PlacementPolicy& policy, const std::vector<NodeState>& all,
                                        const std::vector<size_t>& feasible, const PodShape& pod) {
  return policy.Choose(all, feasible, pod);
}

}  // namespace arbiter::placement
