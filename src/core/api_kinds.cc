#include "core/api_kinds.h"

namespace arbiter {

std::string ApiKind::ApiVersion() const {
  return *group ? std::string(group) + "/" + version : std::string(version);
}

const std::vector<ApiKind>& ApiKinds() {
  static const std::vector<ApiKind> kKinds = {
      {"Event", "", "v1", "events", "event", {"ev"}, true, false, KindId::kEvent},
      {"LimitRange",
       "",
       "v1",
       "limitranges",
       "limitrange",
       {"limits"},
       true,
       true,
       KindId::kLimitRange},
      {"Namespace", "", "v1", "namespaces", "namespace", {"ns"}, false, true, KindId::kNamespace},
      {"Node", "", "v1", "nodes", "node", {"no"}, false, true, KindId::kNode},
      {"Pod", "", "v1", "pods", "pod", {"po"}, true, true, KindId::kPod},
      {"ResourceQuota",
       "",
       "v1",
       "resourcequotas",
       "resourcequota",
       {"quota"},
       true,
       true,
       KindId::kResourceQuota},
      {"Job", "batch", "v1", "jobs", "job", {}, true, false, KindId::kJob},
      {"PodDisruptionBudget",
       "policy",
       "v1",
       "poddisruptionbudgets",
       "poddisruptionbudget",
       {"pdb"},
       true,
       true,
       KindId::kPodDisruptionBudget},
      {"PriorityClass",
       "scheduling.k8s.io",
       "v1",
       "priorityclasses",
       "priorityclass",
       {"pc"},
       false,
       true,
       KindId::kPriorityClass},
      {"ElasticQuota",
       "arbiter.dev",
       "v1alpha1",
       "elasticquotas",
       "elasticquota",
       {"eq", "eqs"},
       true,
       true,
       KindId::kElasticQuota},
      {"PoolPolicy",
       "arbiter.dev",
       "v1alpha1",
       "poolpolicies",
       "poolpolicy",
       {"pp"},
       false,
       true,
       KindId::kPoolPolicy},
      {"PriceBook",
       "arbiter.dev",
       "v1alpha1",
       "pricebooks",
       "pricebook",
       {"pb"},
       false,
       true,
       KindId::kPriceBook},
      {"QoS", "arbiter.dev", "v1alpha1", "qoses", "qos", {}, false, true, KindId::kQoS},
      {"ResourceFlavor",
       "arbiter.dev",
       "v1alpha1",
       "resourceflavors",
       "resourceflavor",
       {"flavor", "flavors", "rf"},
       false,
       true,
       KindId::kResourceFlavor},
      {"PodGroup",
       "scheduling.x-k8s.io",
       "v1alpha1",
       "podgroups",
       "podgroup",
       {"pg", "pgs"},
       true,
       true,
       KindId::kPodGroup},
  };
  return kKinds;
}

const ApiKind& ApiKindOf(KindId id) {
  static const std::vector<const ApiKind*> kById = [] {
    std::vector<const ApiKind*> v(ApiKinds().size(), nullptr);
    for (const ApiKind& k : ApiKinds()) v.at(static_cast<size_t>(k.id)) = &k;
    return v;
  }();
  return *kById.at(static_cast<size_t>(id));
}

const ApiKind* FindApiKind(std::string_view kind) {
  for (const auto& k : ApiKinds())
    if (kind == k.kind) return &k;
  return nullptr;
}

std::string ApiKindsText(const std::function<bool(const ApiKind&)>& keep) {
  std::string text;
  std::string version;
  for (const ApiKind& k : ApiKinds()) {
    if (!keep(k)) continue;
    if (k.ApiVersion() != version) {
      version = k.ApiVersion();
      text += (text.empty() ? "" : "; ") + version + " " + k.kind;
    } else {
      text += std::string(", ") + k.kind;
    }
  }
  return text;
}

}  // namespace arbiter
