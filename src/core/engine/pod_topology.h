// Pod topology in the engine (kube-scheduler's InterPodAffinity and PodTopologySpread): a
// workload's rules, and what a placement attempt counts once before it filters nodes (the
// plugins' PreFilter state). Engine-internal.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/types.h"
#include "core/objects.h"

namespace arbiter::engine {

// A pod's spec.affinity.podAffinity / podAntiAffinity and spec.topologySpreadConstraints
// (shared, never changed after submission).
struct PodTopologyRules {
  PodAffinity affinity;
  PodAffinity anti_affinity;
  std::vector<TopologySpreadConstraint> spread;
  static std::shared_ptr<const PodTopologyRules> Of(const Pod& p);  // null when the pod has none
};

// One attempt's counts for workload `id` (valid while the pool's version is `version`): the
// selected pods per domain value of each term / constraint.
struct TopologyState {
  bool valid = false;
  WorkloadId id{};
  uint64_t version = 0;
  uint64_t global = 0;
  std::string flavor;  // the flavor tried (its labels narrow the spread's domains)
  using Counts = std::map<std::string, int64_t>;  // domain value -> pods selected
  std::vector<Counts> affinity;                   // by required podAffinity term
  bool affinity_any = false;   // some pod is selected by some required podAffinity term
  bool self_affinity = false;  // the workload is selected by all its required podAffinity terms
  std::vector<Counts> anti;    // by required podAntiAffinity term
  // Domains (topologyKey, value) where a placed pod's required anti-affinity selects the workload.
  std::map<std::pair<std::string, std::string>, int64_t> existing_anti;
  struct Spread {
    size_t constraint = 0;  // index into the rules' spread
    Counts counts;          // every eligible domain, 0 included
    int64_t min = 0;        // the smallest count (0 when fewer domains than minDomains)
    bool self = false;      // the workload's own labels are selected
  };
  std::vector<Spread> spread;  // the DoNotSchedule constraints
};

struct Workload;
// Appends to a shape class key what pod topology makes a difference for: the rules, and (once
// any workload had rules, `seen`) the namespace and labels others' rules select by.
void AppendTopologyKey(const Workload& w, bool seen, std::string& k);

}  // namespace arbiter::engine
