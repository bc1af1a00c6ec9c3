// `arbiter validate`'s static checks of pod topology (kube-scheduler's InterPodAffinity and
// PodTopologySpread filters) against the nodes and pods of one manifest set: the rules no node of
// the set can ever satisfy, in kube-scheduler's own words. Given the nodes that admit a pod (its
// nodeSelector, node affinity, tolerations and cordons: `admitting`), a pod
//   - with a required podAffinity term whose topologyKey no admitting node carries, or that selects
//     no pod of the set while the pod does not select itself (kube-scheduler's exception for the
//     first pod of a group), stays Pending: "node(s) didn't match pod affinity rules";
//   - with a DoNotSchedule topology spread constraint whose topologyKey no admitting node carries
//     stays Pending: "node(s) didn't match pod topology spread constraints (missing required
//     label)";
//   - among N pods alike (namespace, labels) whose required podAntiAffinity selects themselves over
//     a topologyKey whose values span M < N domains on their admitting nodes: at most M run at
//     once, the others wait with "node(s) didn't match pod anti-affinity rules" (said once per
//     such group, on its first pod).
// Pure: no I/O. Results are memoised by what they depend on, so a million alike pods cost little.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/objects.h"

namespace arbiter {

class TopologyChecker {
 public:
  struct Finding {
    std::string path;     // the field, e.g. spec.topologySpreadConstraints[0].topologyKey
    std::string message;  // the warning
  };
  using Admits = std::function<bool(const Pod&, const Node&)>;
  TopologyChecker(const ManifestSet& s, Admits admits);

  // The warnings for `p` (empty when it has no topology rules or nothing is unsatisfiable).
  std::vector<Finding> Check(const Pod& p);

 private:
  std::vector<Finding> CheckRules(const Pod& p, const std::vector<const Node*>& admitting);
  // `domains`: per required anti-affinity term, its topologyKey's values on the admitting nodes.
  void CheckAntiGroups(const Pod& p, const std::vector<size_t>& domains, std::vector<Finding>& out);
  bool SelectsSome(const PodAffinityTerm& t, const std::string& owner_ns);
  const std::map<std::string, std::string>* NamespaceLabels(const std::string& ns) const;

  const ManifestSet& s_;
  Admits admits_;
  struct Memo {
    std::vector<Finding> findings;
    std::vector<size_t> anti_domains;  // per required anti-affinity term (CheckAntiGroups)
  };
  std::map<std::string, Memo> memo_;          // by pod key (rules, labels, constraints)
  std::map<std::string, bool> selects_memo_;  // by term key: some pod of the set selected
  std::map<std::string, size_t> alike_;  // (ns, labels, topologyKey) -> pods excluding their own
  bool alike_counted_ = false;
  std::set<std::string> anti_warned_;
};

}  // namespace arbiter
