#include "core/api_kinds.h"

namespace arbiter {

std::string ApiKind::ApiVersion() const {
  return *group ? std::string(group) + "/" + version : std::string(version);
}

const std::vector<ApiKind>& ApiKinds() {
  static const std::vector<ApiKind> kKinds = {
      {"Event", "", "v1", "events", "event", {"ev"}, true, false},
      {"LimitRange", "", "v1", "limitranges", "limitrange", {"limits"}, true, true},
      {"Namespace", "", "v1", "namespaces", "namespace", {"ns"}, false, true},
      {"Node", "", "v1", "nodes", "node", {"no"}, false, true},
      {"Pod", "", "v1", "pods", "pod", {"po"}, true, true},
      {"ResourceQuota", "", "v1", "resourcequotas", "resourcequota", {"quota"}, true, true},
      {"PodDisruptionBudget",
       "policy",
       "v1",
       "poddisruptionbudgets",
       "poddisruptionbudget",
       {"pdb"},
       true,
       true},
      {"PriorityClass",
       "scheduling.k8s.io",
       "v1",
       "priorityclasses",
       "priorityclass",
       {"pc"},
       false,
       true},
      {"ElasticQuota",
       "arbiter.dev",
       "v1alpha1",
       "elasticquotas",
       "elasticquota",
       {"eq", "eqs"},
       true,
       true},
      {"PoolPolicy", "arbiter.dev", "v1alpha1", "poolpolicies", "poolpolicy", {"pp"}, false, true},
      {"PriceBook", "arbiter.dev", "v1alpha1", "pricebooks", "pricebook", {"pb"}, false, true},
      {"QoS", "arbiter.dev", "v1alpha1", "qoses", "qos", {}, false, true},
      {"ResourceFlavor",
       "arbiter.dev",
       "v1alpha1",
       "resourceflavors",
       "resourceflavor",
       {"flavor", "flavors", "rf"},
       false,
       true},
      {"PodGroup",
       "scheduling.x-k8s.io",
       "v1alpha1",
       "podgroups",
       "podgroup",
       {"pg", "pgs"},
       true,
       true},
  };
  return kKinds;
}

const ApiKind* FindApiKind(std::string_view kind) {
  for (const auto& k : ApiKinds())
    if (kind == k.kind) return &k;
  return nullptr;
}

}  // namespace arbiter
