#include "server/state/kind_table.h"

namespace arbiter::server {

namespace {

// The columns of one kind that are the server's own (the rest comes from the kinds table, the
// Table printers and the authorization classes).
struct Behaviour {
  Storage storage;
  StatusWriter status;
  UpdateRule update_rule;
  QuotaEffect quota_effect;
};

Behaviour BehaviourOf(KindId id) {
  using S = Storage;
  using U = UpdateRule;
  using Q = QuotaEffect;
  constexpr StatusWriter kServer = StatusWriter::kServer;
  switch (id) {
    case KindId::kPod:
      return {S::kWorkload, kServer, U::kPodSpec, Q::kNamespace};
    case KindId::kJob:
      return {S::kController, kServer, U::kAny, Q::kNone};
    case KindId::kNode:
      return {S::kNode, StatusWriter::kClient, U::kAny, Q::kNone};
    case KindId::kEvent:
      return {S::kServerWritten, kServer, U::kAny, Q::kNone};
    case KindId::kResourceQuota:
    case KindId::kPodDisruptionBudget:
      return {S::kPolicy, kServer, U::kAny, Q::kNamespace};
    case KindId::kElasticQuota:
      return {S::kPolicy, kServer, U::kAny, Q::kEveryNamespaceOfKind};
    case KindId::kPriorityClass:
      return {S::kPolicy, kServer, U::kImmutableValue, Q::kNone};
    case KindId::kPoolPolicy:
      return {S::kPolicy, kServer, U::kSingleton, Q::kNone};
    case KindId::kNamespace:
    case KindId::kLimitRange:
    case KindId::kPriceBook:
    case KindId::kQoS:
    case KindId::kResourceFlavor:
    case KindId::kPodGroup:
      return {S::kPolicy, kServer, U::kAny, Q::kNone};
  }
  return {S::kPolicy, kServer, U::kAny, Q::kNone};
}

}  // namespace

const std::vector<KindInfo>& ServedKinds() {
  static const std::vector<KindInfo> kKinds = [] {
    static std::vector<std::string> api_versions;  // owns the strings KindInfo points to
    api_versions.reserve(ApiKinds().size());
    std::vector<KindInfo> v;
    for (const ApiKind& k : ApiKinds()) {
      api_versions.push_back(k.ApiVersion());
      const Behaviour b = BehaviourOf(k.id);
      v.push_back({k.id, k.kind, api_versions.back().c_str(), k.namespaced, b.storage, b.status,
                   b.update_rule, b.quota_effect, &kube::TablePrinterOf(k.id),
                   kube::AuthClassOf(k.id)});
    }
    return v;
  }();
  return kKinds;
}

const KindInfo* FindKind(const std::string& kind) {
  for (const auto& k : ServedKinds())
    if (kind == k.kind) return &k;
  return nullptr;
}

}  // namespace arbiter::server
