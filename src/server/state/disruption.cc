// pods/eviction and PodDisruptionBudget status: the Cluster's part (cluster.h), as kube-apiserver's
// eviction subresource (pkg/registry/core/pod/storage/eviction.go) and the disruption controller
// do it, with the budget's status always current (pdb_status.h).
#include <string>
#include <vector>

#include "server/state/cluster.h"
#include "server/state/pdb_status.h"
#include "server/state/pod_status.h"

namespace arbiter::server {

namespace {

MutationResult Refuse(ApiError::Reason reason, const std::string& name, std::string message,
                      std::string cause = "") {
  MutationResult r;
  ApiError e;
  e.reason = reason;
  e.kind = "Pod";
  e.name = name;
  e.message = std::move(message);
  e.cause = std::move(cause);
  r.error = std::move(e);
  return r;
}

// Kubernetes' canIgnorePDB: finished, pending or terminating pods are deleted without a budget.
bool CanIgnorePdb(const Json& pod) {
  if (pod.at("metadata").contains("deletionTimestamp")) return true;
  const std::string phase =
      pod.contains("status") && pod["status"].is_object() ? pod["status"].value("phase", "") : "";
  return phase == "Succeeded" || phase == "Failed" || phase == "Pending";
}

int64_t StatusInt(const Json& pdb, const char* field) {
  if (!pdb.contains("status") || !pdb["status"].is_object()) return 0;
  const Json& v = pdb["status"].value(field, Json());
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

}  // namespace

MutationResult Cluster::Evict(const Mutation& m) {
  const std::string ns = m.namespace_.empty() ? "default" : m.namespace_;
  const Json* pod = store_.Get("Pod", ns, m.name);
  if (!pod) return Refuse(ApiError::Reason::kNotFound, m.name, "");
  if (!play_ && !CanIgnorePdb(*pod)) {  // (replay: the budget allowed it)
    std::vector<const Json*> budgets;   // the stored PDB objects that select the pod
    auto pdbs = policy_.find("PodDisruptionBudget");
    if (pdbs != policy_.end())
      for (auto it = pdbs->second.lower_bound({ns, ""});
           it != pdbs->second.end() && it->first.first == ns; ++it)
        if (!it->second.pdbs.empty() && PdbSelects(it->second.pdbs[0], *pod))
          if (const Json* o = store_.Get("PodDisruptionBudget", ns, it->first.second))
            budgets.push_back(o);
    if (budgets.size() > 1)
      return Refuse(
          ApiError::Reason::kInternal, m.name,
          "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
          "not support.");
    if (budgets.size() == 1) {
      const Json& pdb = *budgets[0];
      const int64_t healthy = StatusInt(pdb, "currentHealthy");
      const int64_t desired = StatusInt(pdb, "desiredHealthy");
      // An unready pod goes when the application is not disrupted now (IfHealthyBudget, the
      // default unhealthyPodEvictionPolicy); otherwise a disruption must be allowed.
      const bool unready_ok = !PodHealthy(*pod) && healthy >= desired && desired > 0;
      if (!unready_ok && StatusInt(pdb, "disruptionsAllowed") <= 0)
        return Refuse(ApiError::Reason::kTooManyRequests, m.name,
                      "Cannot evict pod as it would violate the pod's disruption budget.",
                      "The disruption budget " + pdb["metadata"].value("name", "") + " needs " +
                          std::to_string(desired) + " healthy pods and has " +
                          std::to_string(healthy) + " currently");
    }
  }
  if (m.dry_run) {
    MutationResult r;
    r.object = *pod;
    return r;
  }
  // The DisruptionTarget condition first, then the delete (the pod's status keeps it).
  Json marked = *pod;
  Json& st = marked["status"];
  if (!st.is_object()) st = Json::object();
  if (!st.contains("conditions") || !st["conditions"].is_array()) st["conditions"] = Json::array();
  Json condition = {{"type", "DisruptionTarget"},        {"status", "True"},
                    {"lastProbeTime", nullptr},          {"lastTransitionTime", KubeTime(m.time)},
                    {"reason", "EvictionByEvictionAPI"}, {"message", "Eviction API: evicting"}};
  bool replaced = false;
  for (auto& c : st["conditions"])
    if (c.is_object() && c.value("type", "") == "DisruptionTarget") {
      c = condition;
      replaced = true;
    }
  if (!replaced) st["conditions"].push_back(std::move(condition));
  store_.Put("Pod", ns, m.name, std::move(marked));
  Mutation del = m;
  del.eviction = false;
  return Delete(del);
}

void Cluster::RefreshPdbs(Millis t) {
  auto pdbs = policy_.find("PodDisruptionBudget");
  if (pdbs == policy_.end()) return;
  for (const auto& ns : quota_dirty_) {
    auto first = pdbs->second.lower_bound({ns, ""});
    if (first == pdbs->second.end() || first->first.first != ns) continue;
    const std::vector<const Json*> pods = store_.List("Pod", ns);
    for (auto it = first; it != pdbs->second.end() && it->first.first == ns; ++it) {
      const Json* stored = store_.Get("PodDisruptionBudget", ns, it->first.second);
      if (!stored || it->second.pdbs.empty()) continue;
      Json status = PdbStatus(it->second.pdbs[0], *stored, pods, t);
      if (stored->contains("status") && (*stored)["status"] == status) continue;
      Json o = *stored;
      o["status"] = std::move(status);
      store_.Put("PodDisruptionBudget", ns, it->first.second, std::move(o));
    }
  }
}

}  // namespace arbiter::server
