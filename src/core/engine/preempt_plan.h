// A preemption plan on one node, and the cache of plans per preemption class (engine-internal).
//
// A plan (kube-scheduler's dry run on one candidate node) depends only on what is on the node and
// on the preemptor's plan class: shape, priority, selector, namespace, QoS and preemption policy
// (the preemption class without its pod group). So, while neither the node (its epoch) nor the
// pool at large (State::global_epoch: borrowed flags, policy objects, node order) changes, a
// class's plan on a node stays what it was: the cache keeps it, and a scan of hundreds of
// candidate nodes per preemptor compares cached plans instead of recomputing each one. The cache
// is used only where a plan depends on nothing else: no PodDisruptionBudgets (their allowances
// move with time and with other nodes), no minRuntime (it depends on now), a preemptor not
// nominated itself, and no member of the preemptor's own pod group nominated on the node. With
// check_invariants, every cache answer is checked against a fresh computation.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/engine/lost_work.h"
#include "core/engine/workload.h"

namespace arbiter::engine {

struct PreemptPlan {
  uint32_t node = 0;          // position
  std::vector<Slot> victims;  // by WorkloadId
  int pdb_violations = 0;
  std::vector<std::string> pdbs;
  int32_t max_priority = 0;
  int64_t sum_priority = 0;
  Millis earliest_start_of_max = 0;
  // Under preemption.victimOrder LeastLostWork: the work its victims lose (lost_work.h).
  LostWork lost;
  // Under preemption.type QoS: the Slurm removal rank (qos_victims.h) of the job whose removal
  // made the preemptor fit on this node.
  std::array<int64_t, 3> qos_key{};
  bool operator==(const PreemptPlan&) const = default;
};

// kube-scheduler's pickOneNodeForPreemption order: fewest PDB violations, lowest highest victim
// priority, lowest priority sum, fewest victims, latest start among the highest-priority victims,
// then node order. Under victimOrder LeastLostWork (`least_lost_work`) the least work lost by all
// victims together comes after the fewest victims, before the latest start: the priority rules and
// the victim count still decide first, so no plan takes a higher priority or more victims to save
// work.
inline bool BetterPlan(const PreemptPlan& a, const PreemptPlan& b, bool least_lost_work = false) {
  if (a.pdb_violations != b.pdb_violations) return a.pdb_violations < b.pdb_violations;
  if (a.max_priority != b.max_priority) return a.max_priority < b.max_priority;
  if (a.sum_priority != b.sum_priority) return a.sum_priority < b.sum_priority;
  if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
  if (least_lost_work && a.lost != b.lost) return a.lost < b.lost;
  if (a.earliest_start_of_max != b.earliest_start_of_max)
    return a.earliest_start_of_max > b.earliest_start_of_max;
  return a.node < b.node;
}

// Under preemption.type QoS, Slurm's node choice: fewest PDB violations (BestEffort budgets),
// then the node Slurm's removal order reaches first (the lowest key), fewest victims, node order.
inline bool BetterQoSPlan(const PreemptPlan& a, const PreemptPlan& b) {
  if (a.pdb_violations != b.pdb_violations) return a.pdb_violations < b.pdb_violations;
  if (a.qos_key != b.qos_key) return a.qos_key < b.qos_key;
  if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
  return a.node < b.node;
}

// One plan class's cache: valid while State::global_epoch is `global` and the pool has
// `node.size()` nodes.
struct PlanCache {
  uint64_t global = 0;
  std::vector<uint64_t> node;  // by position: the node's epoch + 1 when it had no plan
  struct Entry {
    uint64_t epoch1 = 0;  // the node's epoch + 1 when the plan was made
    PreemptPlan plan;
  };
  std::unordered_map<uint32_t, Entry> plans;  // by position: nodes that had a plan
};

}  // namespace arbiter::engine
